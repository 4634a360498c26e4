package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
)

// testPeriods precreates three days of a fresh prefix, finds them on a
// rerun, lists what expire would drop (dropping nothing), expires them,
// and checks that bad flags send nothing.
func testPeriods(t *testing.T, tk runner, a *account) {
	prefix := "Cli" + strings.ToUpper(testenv.UniqueName("p")[1:7])
	// Tomorrow noon: precreate refuses past periods.
	day := keys.Daily.Start(time.Now().UTC()).AddDate(0, 0, 1).Add(12 * time.Hour)
	t.Cleanup(func() {
		svc, err := a.tables()
		if err != nil {
			return
		}
		for d := 0; d < 3; d++ {
			n, _ := keys.PeriodTable(prefix, keys.Daily, day.AddDate(0, 0, d), 0)
			_, _ = svc.DeleteTable(context.Background(), n, nil)
		}
	})
	at := day.Format(time.RFC3339)

	out, errOut, code := tk(t, "-json", "periods", "precreate", "-prefix", prefix, "-period", "daily", "-ahead", "2", "-at", at)
	var got struct{ Tables []string }
	if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || len(got.Tables) != 3 {
		t.Fatalf("precreate: exit %d, %s%s", code, out, errOut)
	}
	want, _ := keys.PeriodTable(prefix, keys.Daily, day.AddDate(0, 0, 2), 0)
	if got.Tables[2] != want {
		t.Fatalf("precreate: %q, want the last to be %s", got.Tables, want)
	}
	// A rerun lists once and creates nothing: -stats shows one request.
	out, errOut, code = tk(t, "-stats", "periods", "precreate", "-prefix", prefix, "-period", "daily", "-ahead", "2", "-at", at)
	if code != exitOK || !strings.Contains(out, "3 period tables in place") || !strings.Contains(errOut, "QueryTables") || strings.Contains(errOut, "CreateTable") {
		t.Fatalf("rerun: exit %d, %s%s", code, out, errOut)
	}
	// Three days later, keeping one period would drop all three: without
	// -yes they are listed and none is dropped.
	later := day.AddDate(0, 0, 3).Format(time.RFC3339)
	out, errOut, code = tk(t, "-stats", "periods", "expire", "-prefix", prefix, "-period", "daily", "-keep", "1", "-at", later)
	if code != exitOK || strings.Count(out, "would drop "+prefix) != 3 || !strings.Contains(out, "add -yes") || strings.Contains(errOut, "DeleteTable") {
		t.Fatalf("expire dry run: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = tk(t, "-json", "periods", "expire", "-prefix", prefix, "-period", "daily", "-keep", "1", "-at", later, "-yes")
	var exp expireOutput
	if code != exitOK || json.Unmarshal([]byte(out), &exp) != nil || exp.DryRun || len(exp.Dropped) != 3 {
		t.Fatalf("expire: exit %d, %s%s", code, out, errOut)
	}
	// -keep 2 one day after the first day keeps both: nothing to drop.
	out, errOut, code = tk(t, "periods", "expire", "-prefix", prefix, "-period", "daily", "-keep", "2", "-at", day.AddDate(0, 0, 1).Format(time.RFC3339), "-yes")
	if code != exitOK || !strings.Contains(out, "0 dropped") {
		t.Fatalf("expire with nothing old: exit %d, %s%s", code, out, errOut)
	}
}

func TestPeriodsOnFake(t *testing.T) {
	a, _ := fakeAccount()
	testPeriods(t, inProcess(a), a)
}

func TestPeriodsUsage(t *testing.T) {
	a, _ := fakeAccount()
	tk := inProcess(a)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"periods", "precreate", "-period", "daily"}, "-prefix is required"},
		{[]string{"periods", "precreate", "-prefix", "Logins"}, "-period is required"},
		{[]string{"periods", "precreate", "-prefix", "Logins", "-period", "weekly"}, "weekly"},
		{[]string{"periods", "precreate", "-prefix", "Logins", "-period", "daily", "-ahead", "-1"}, "-ahead -1"},
		{[]string{"periods", "precreate", "-prefix", "Logins", "-period", "daily", "-ahead", "367"}, "want 0..366"},
		{[]string{"periods", "precreate", "-prefix", "bad-prefix", "-period", "daily"}, "-prefix"},
		{[]string{"periods", "precreate", "-prefix", "Logins", "-period", "daily", "-at", "yesterday"}, "-at"},
		// A past period's table may have been expired on purpose.
		{[]string{"periods", "precreate", "-prefix", "Logins", "-period", "daily", "-at", time.Now().AddDate(0, 0, -3).Format(time.RFC3339)}, "is in a past period"},
		{[]string{"periods", "expire", "-prefix", "Logins", "-period", "daily"}, "-keep is required"},
		{[]string{"periods", "expire", "-prefix", "Logins", "-period", "daily", "-keep", "3", "extra"}, "unexpected arguments"},
	} {
		out, errOut, code := tk(t, c.args...)
		if code != exitUsage || !strings.Contains(out+errOut, c.says) {
			t.Errorf("tablekit %q: exit %d, want 2 saying %q; got:\n%s%s", c.args, code, c.says, out, errOut)
		}
		if n := a.ledger.Total(); n != 0 {
			t.Errorf("tablekit %q sent %d requests, want 0", c.args, n)
		}
	}
	for _, cmd := range []string{"precreate", "expire"} {
		if out, errOut, code := tk(t, "periods", cmd, "-help"); code != exitOK || !strings.Contains(out+errOut, "examples:") {
			t.Errorf("periods %s -help: exit %d, %s%s", cmd, code, out, errOut)
		}
	}
}
