package msgtype

import "testing"

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		t    string
		want bool
	}{
		{"archive.v1", true}, {"tablekit.index.emails.v12", true}, {"a-b_c.v0", true},
		{"", false}, {"archive", false}, {"archive.v", false}, {"1archive.v1", false},
		{"archive.v1 ", false}, {"arch ive.v1", false}, {"archive.V1", false},
	} {
		if got := Valid(tc.t); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
