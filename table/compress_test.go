package table_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

type photo struct {
	table.Meta
	Photo []byte `table:"Photo,gzip"`
	Thumb []byte
}

type photoPlain struct {
	table.Meta
	Photo []byte
}

func storedPhoto(t *testing.T, body []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m["Photo"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGzipPropertyRoundTrip(t *testing.T) {
	text := []byte(strings.Repeat(`{"sku":"A-1","qty":3,"note":"fragile"},`, 3000)) // 117 KB: over the 64 KiB binary limit uncompressed
	body, err := tableio.Marshal(&photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: text, Thumb: []byte{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	stored := storedPhoto(t, body)
	if len(stored) >= table.MaxBinaryBytes || stored[0] != 0x1f || stored[1] != 0x8b {
		t.Fatalf("stored %d bytes starting % x", len(stored), stored[:3])
	}
	// Any gzip reader reads the stored bytes.
	zr, err := stdgzip.NewReader(bytes.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, text) {
		t.Fatal("compress/gzip does not read the stored property back")
	}
	var back photo
	if err := tableio.Unmarshal(body, &back); err != nil || !bytes.Equal(back.Photo, text) || !bytes.Equal(back.Thumb, []byte{1, 2}) {
		t.Fatalf("round trip: %d bytes, %v", len(back.Photo), err)
	}
}

func TestGzipPropertyReadsPlainValues(t *testing.T) {
	// Written before the tag was added (or too small to shrink): plain.
	for _, v := range [][]byte{[]byte("plain photo bytes"), {0x1f, 0x8b, 0x08, 0x00}, {}} {
		body, err := tableio.Marshal(&photoPlain{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: v})
		if err != nil {
			t.Fatal(err)
		}
		var back photo
		if err := tableio.Unmarshal(body, &back); err != nil || !bytes.Equal(back.Photo, v) {
			t.Fatalf("plain % x read as % x, %v", v, back.Photo, err)
		}
	}
	// A small value compression does not shrink is stored plain...
	body, _ := tableio.Marshal(&photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: []byte("tiny")})
	if got := storedPhoto(t, body); string(got) != "tiny" {
		t.Fatalf("tiny stored as % x", got)
	}
	// ...unless it is gzip data itself: that is always wrapped, so it
	// reads back as the bytes that were written.
	gzData := []byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0} // an empty gzip stream
	body, _ = tableio.Marshal(&photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: gzData})
	var back photo
	if err := tableio.Unmarshal(body, &back); err != nil || !bytes.Equal(back.Photo, gzData) {
		t.Fatalf("gzip data read back as % x, %v", back.Photo, err)
	}
}

func TestGzipPropertyLimits(t *testing.T) {
	// Over MaxEntityBytes before compression: refused, typed.
	_, err := tableio.Marshal(&photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: make([]byte, table.MaxEntityBytes+1)})
	var ie *table.InputError
	if !errors.As(err, &ie) || !errors.Is(err, table.ErrBinaryTooLong) || ie.Field != "Photo" {
		t.Fatalf("over the bound: %v", err)
	}
	// A bomb: 8 MiB of zeros stored by another writer as a gzip stream of
	// about 8 KiB. Reading refuses it at the bound.
	var z bytes.Buffer
	zw := stdgzip.NewWriter(&z)
	zw.Write(make([]byte, 8<<20))
	zw.Close()
	body, err := tableio.Marshal(&photoPlain{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: z.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	var back photo
	err = tableio.Unmarshal(body, &back)
	if !errors.Is(err, table.ErrInflatedTooLarge) || !errors.As(err, &ie) || ie.Field != "Photo" {
		t.Fatalf("bomb: %v", err)
	}
	// The tag on anything but []byte is a plan error.
	type bad struct {
		table.Meta
		Name string `table:",gzip"`
	}
	if _, err := tableio.Marshal(&bad{}); !errors.Is(err, table.ErrUnsupportedType) {
		t.Fatalf("gzip on a string: %v", err)
	}
}

// TestGzipPropertyOnFake: through a table, the wire holds the compressed
// bytes and the typed read inflates them.
func TestGzipPropertyOnFake(t *testing.T) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("photos", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := table.New[photo](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("row of a CSV export,42,2026-11-23\n", 5000)) // 170 KB
	if err := tbl.Upsert(t.Context(), &photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Photo: big}, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := tbl.Entities().Get(t.Context(), "p", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	pv, _ := raw.Get("Photo")
	if b, ok := pv.AsBinary(); !ok || len(b) > table.MaxBinaryBytes || b[0] != 0x1f {
		t.Fatalf("stored: %d bytes, %v", len(b), ok)
	}
	got, err := tbl.Get(t.Context(), "p", "r", nil)
	if err != nil || !bytes.Equal(got.Photo, big) {
		t.Fatalf("Get: %v", err)
	}
	// Over the bound before compression: refused before any request.
	svc.ResetCounts()
	err = tbl.Upsert(t.Context(), &photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r2"}, Photo: make([]byte, table.MaxEntityBytes+1)}, nil)
	if !errors.Is(err, table.ErrBinaryTooLong) || svc.Total() != 0 {
		t.Fatalf("over the bound: %v after %d requests", err, svc.Total())
	}
}

// TestGzipPropertyEncrypted: a field tagged gzip and encrypt is compressed
// before it is encrypted (ciphertext does not compress) and reads back.
func TestGzipPropertyEncrypted(t *testing.T) {
	type secretDoc struct {
		table.Meta
		Doc []byte `table:"Doc,gzip,encrypt"`
	}
	client := fake.NewTableService(nil).NewClient("docs", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := table.New[secretDoc](client, &table.Options{Encryption: &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": keyOf(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	// 120 KB: it fits the 64 KiB binary limit only because it is
	// compressed before it is encrypted.
	doc := bytes.Repeat([]byte("patient,visit,note\n7,2026-11-23,routine\n"), 3000)
	if err := tbl.Upsert(t.Context(), &secretDoc{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Doc: doc}, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(t.Context(), "p", "r", nil)
	if err != nil || !bytes.Equal(got.Doc, doc) {
		t.Fatalf("Get: %d bytes, %v", len(got.Doc), err)
	}
}
