package patterns_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Log blobs written gzip-compressed, marked Content-Encoding: gzip so a
// browser or azcopy --decompress shows the lines; Read reads them as it
// reads plain ones.
func ExampleBlobLog_compress() {
	ctx := context.Background()
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "logs", nil)
	log, _ := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{Writer: "web1", Compress: true})
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	for i := range 1000 {
		_ = log.AppendAt(ctx, at.Add(time.Duration(i)*time.Second), fmt.Sprintf("GET /employees/%d 200", i), nil)
	}
	_ = log.Close(ctx, nil)
	n := 0
	for _, err := range log.Read(ctx, at, at.Add(time.Hour), nil) {
		if err == nil {
			n++
		}
	}
	stored, _ := blobs.Blob("logs", "app/2014/07/31/1800/web1-000001.log")
	props, _ := bc.ServiceClient().NewContainerClient("logs").NewBlobClient("app/2014/07/31/1800/web1-000001.log").GetProperties(ctx, nil)
	fmt.Println(n, *props.ContentEncoding, len(stored) < 64_000/5)
	// Output: 1000 gzip true
}

// The report body in a gzip blob: the entity keeps its name, its hash and
// its uncompressed size (BodySize).
func ExampleLargeEntity_compress() {
	ctx := context.Background()
	_, client := newClient("Reports")
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "bodies", nil)
	type Report struct {
		table.Meta
		Body string
	}
	reportTable, err := table.New[Report](client, nil)
	if err != nil {
		panic(err)
	}
	reports, _ := patterns.NewLargeEntity[Report](reportTable, bc, "bodies", []string{"Body"}, 0, &patterns.LargeEntityOptions{Compress: true})
	body := strings.Repeat("customer,order,amount\n42,1000017,99.50\n", 5000)
	_ = reports.Put(ctx, &Report{Meta: table.Meta{PartitionKey: "2026-11", RowKey: "daily"}, Body: body}, nil)
	back, _ := reports.Get(ctx, "2026-11", "daily", nil)
	stored, _ := blobs.Blob("bodies", blobs.Names("bodies")[0])
	fmt.Println(back.Body == body, len(body), len(stored) < len(body)/50)
	// Output: true 195000 true
}
