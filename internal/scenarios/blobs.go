package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Employee456 is the guide's employee with a photo.
type Employee456 struct {
	table.Meta
	Name  string
	Photo []byte
}

func tourPhoto(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Photos")
	if err != nil {
		return err
	}
	container, err := e.newContainer(ctx, "photos")
	if err != nil {
		return err
	}
	le, err := patterns.NewLargeEntity[Employee456](client, e.blobs, container, []string{"Photo"}, 0)
	if err != nil {
		return err
	}
	step := e.step(w)
	photo := bytes.Repeat([]byte{0xff, 0xd8, 0xff, 0xe0}, 64*1024) // a 256 KiB "JPEG"
	emp := &Employee456{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", Photo: photo}
	if err := le.Put(ctx, emp); err != nil {
		return err
	}
	step(fmt.Sprintf("store employee 000123 with a %d KiB photo: the photo to a blob first, then the entity with its name and hash", len(photo)/1024))
	back, err := le.Get(ctx, "Sales", "000123")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("read it back: %s, photo of %d KiB checked against its SHA-256", back.Name, len(back.Photo)/1024))
	n, err := le.Sweep(ctx, 0)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("sweep for blobs no entity names (what a crash between the two writes leaves): %d found", n))
	return nil
}

func tourLogs(ctx context.Context, w io.Writer, e *env) error {
	container, err := e.newContainer(ctx, "logs")
	if err != nil {
		return err
	}
	base := time.Date(2014, 7, 31, 17, 55, 0, 0, time.UTC)
	log, err := patterns.NewBlobLog(e.blobs, container, "applog", &patterns.BlobLogOptions{Writer: "web1", Now: func() time.Time { return base }})
	if err != nil {
		return err
	}
	step := e.step(w)
	for i := 0; i < 600; i++ {
		if err := log.AppendAt(ctx, base.Add(time.Duration(i)*time.Second), fmt.Sprintf("GET /employees/%06d 200", i)); err != nil {
			return err
		}
	}
	if err := log.Close(ctx); err != nil {
		return err
	}
	step("600 log entries from 17:55 to 18:05, buffered and written as one blob per hour (applog/2014/07/31/1700/…, …/1800/…)")
	n := 0
	for _, err := range patterns.ReadLog(ctx, e.blobs, container, "applog", base.Add(4*time.Minute), base.Add(6*time.Minute)) {
		if err != nil {
			return err
		}
		n++
	}
	step(fmt.Sprintf("read 17:59 to 18:01 back by listing the hours' blobs: %d entries", n))
	return nil
}
