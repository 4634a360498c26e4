package gz

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// jsonEntities is about 1 MiB of JSON-lines entities as the table service
// stores them: keys, names, numbers, times, an enum, some free text.
func jsonEntities() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("order shipped pending customer invoice paid refund warehouse berlin madrid lisbon amsterdam express standard gift fragile priority note")
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, `{"PartitionKey":"customer-%05d","RowKey":"order-%09d","Timestamp":"2026-11-%02dT%02d:%02d:%02d.%07dZ","Amount@odata.type":"Edm.Double","Amount":%.2f,"Items":%d,"Status":"%s","City":"%s","Note":"%s %s %s %d"}`+"\n",
			r.IntN(5000), 1_000_000_000-i, 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(10_000_000),
			r.Float64()*1000, 1+r.IntN(20), words[r.IntN(4)], words[8+r.IntN(4)], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(100000))
	}
	return b.Bytes()
}

// logLines is about 1 MiB of BlobLog lines: times, levels, request IDs,
// paths, durations.
func logLines() []byte {
	r := rand.New(rand.NewPCG(3, 4))
	paths := []string{"/api/orders", "/api/customers", "/api/invoices/search", "/healthz", "/api/orders/items"}
	levels := []string{"INFO", "INFO", "INFO", "WARN", "ERROR"}
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, `{"t":"2026-11-23T14:%02d:%02d.%09dZ","m":"%s request id=%016x path=%s status=%d took=%dms user=u%d"}`+"\n",
			(i/3000)%60, (i/50)%60, r.IntN(1_000_000_000), levels[r.IntN(len(levels))], r.Uint64(), paths[r.IntN(len(paths))], []int{200, 200, 201, 404, 500}[r.IntN(5)], r.IntN(900), r.IntN(20000))
	}
	return b.Bytes()
}

type codec struct {
	name string
	new  func(io.Writer) io.WriteCloser
	read func(io.Reader) (io.Reader, error)
}

func codecs() []codec {
	return []codec{
		{"stdlib", func(w io.Writer) io.WriteCloser {
			z, _ := stdgzip.NewWriterLevel(w, stdgzip.DefaultCompression)
			return z
		},
			func(r io.Reader) (io.Reader, error) { return stdgzip.NewReader(r) }},
		{"stdlib-bestspeed", func(w io.Writer) io.WriteCloser { z, _ := stdgzip.NewWriterLevel(w, stdgzip.BestSpeed); return z },
			func(r io.Reader) (io.Reader, error) { return stdgzip.NewReader(r) }},
		{"klauspost", func(w io.Writer) io.WriteCloser { z, _ := kgzip.NewWriterLevel(w, kgzip.DefaultCompression); return z },
			func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) }},
		{"klauspost-best", func(w io.Writer) io.WriteCloser { z, _ := kgzip.NewWriterLevel(w, kgzip.BestCompression); return z },
			func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) }},
	}
}

// BenchmarkGzipCodecs compares stdlib compress/gzip with
// klauspost/compress/gzip at the default level on ~1 MiB payloads: the
// ns/op is per MiB, ratio% is compressed/original.
//
//	go test -run '^$' -bench BenchmarkGzipCodecs -benchtime 20x ./internal/gz/
func BenchmarkGzipCodecs(b *testing.B) {
	payloads := []struct {
		name string
		data []byte
	}{{"json-entities", jsonEntities()}, {"log-lines", logLines()}}
	for _, p := range payloads {
		for _, c := range codecs() {
			var z bytes.Buffer
			b.Run(p.name+"/"+c.name+"/compress", func(b *testing.B) {
				b.SetBytes(int64(len(p.data)))
				for b.Loop() {
					z.Reset()
					w := c.new(&z)
					w.Write(p.data)
					w.Close()
				}
				b.ReportMetric(100*float64(z.Len())/float64(len(p.data)), "ratio%")
			})
			b.Run(p.name+"/"+c.name+"/decompress", func(b *testing.B) {
				b.SetBytes(int64(len(p.data)))
				for b.Loop() {
					r, err := c.read(bytes.NewReader(z.Bytes()))
					if err != nil {
						b.Fatal(err)
					}
					if n, _ := io.Copy(io.Discard, r); n != int64(len(p.data)) {
						b.Fatal(n)
					}
				}
			})
		}
	}
}
