package integration

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// TestPatternBlobErrorsRedactTheSAS sends the blob requests of the
// patterns (BlobLog, LargeEntity, a model's blob lists) to broken endpoints
// through a client whose URL carries a SAS token, and scans every error for
// the signature: the transport's error names the URL, token included, so a
// pattern that returns it raw leaks it.
func TestPatternBlobErrorsRedactTheSAS(t *testing.T) {
	ctx := t.Context()
	cred, err := sas.NewCredential("devstoreaccount1", azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	token, err := sas.Table{Table: "photos", Permissions: sas.TablePermissions{Read: true}, Expiry: time.Now().Add(time.Hour)}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(token)
	sig := q.Get("sig")
	secrets := map[string]string{"SAS signature": sig, "escaped SAS signature": url.QueryEscape(sig)}
	retry := policy.RetryOptions{MaxRetries: -1}
	type Photo struct {
		table.Meta
		Image []byte
	}
	for where, endpoint := range brokenEndpoints(t) {
		bopts := &azblob.ClientOptions{}
		bopts.Retry = retry
		blobs, err := azblob.NewClientWithNoCredential(endpoint+"/devstoreaccount1?"+token, bopts)
		if err != nil {
			t.Fatal(err)
		}
		topts := &aztables.ClientOptions{}
		topts.Retry = retry
		tc, err := aztables.NewClientWithNoCredential(endpoint+"/devstoreaccount1/photos?"+token, topts)
		if err != nil {
			t.Fatal(err)
		}
		errs := map[string]error{}
		log, err := patterns.NewBlobLog(blobs, "logs", "app", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = log.AppendAt(ctx, time.Now(), "x", nil)
		errs["BlobLog.Flush"] = log.Flush(ctx, nil)
		for _, err := range log.Read(ctx, time.Now().Add(-time.Hour), time.Now(), nil) {
			errs["BlobLog.Read"] = err
			break
		}
		large, err := patterns.NewLargeEntity[Photo](tableOf(table.New[Photo](tc, nil)), blobs, "photos", []string{"Image"}, 16, nil)
		if err != nil {
			t.Fatal(err)
		}
		errs["LargeEntity.Put"] = large.Put(ctx, &Photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Image: make([]byte, 64)}, nil)
		_, errs["LargeEntity.Sweep"] = large.Sweep(ctx, patterns.MinSweepGrace, nil)
		bi, err := patterns.OpenModel(ctx, tableOf(table.New[Photo](tc, nil)), &patterns.ModelOptions[Photo]{Name: "photos", Queue: fake.NewQueueService(nil).NewQueueClient("q", nil),
			RemoteLists: []patterns.ListDef[Photo]{{Name: "lname", Value: func(*Photo) string { return "Jones" }, Blobs: blobs, Container: "lists", Prefix: "lname"}}})
		if err != nil {
			t.Fatal(err)
		}
		_, errs["Model.IDs of a blob list"] = bi.IDs(ctx, "lname", "", "Jones", nil)
		for call, err := range errs {
			if err == nil {
				t.Errorf("%s at a %s succeeded", call, where)
				continue
			}
			for what, secret := range secrets {
				for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err)} {
					if strings.Contains(text, secret) {
						t.Errorf("%s at a %s: the %s appears in: %.200s", call, where, what, text)
						break
					}
				}
			}
		}
	}
}
