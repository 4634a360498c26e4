package fake_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/sas"
)

const sasKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func sasCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprint(re.StatusCode, " ", re.ErrorCode)
	}
	return fmt.Sprint(err)
}

// Set ACL takes at most five signed identifiers of 1 to 64 characters;
// a table's policies set Start, Expiry and Permission.
func TestACLLimits(t *testing.T) {
	ctx := context.Background()
	q := fake.NewQueueService(nil).NewQueueClient("acl", nil)
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	perm := "r"
	ids := func(n int, id func(int) string) []*azqueue.SignedIdentifier {
		var out []*azqueue.SignedIdentifier
		for i := range n {
			out = append(out, &azqueue.SignedIdentifier{ID: strp(id(i)), AccessPolicy: &azqueue.AccessPolicy{Permission: &perm}})
		}
		return out
	}
	short := func(i int) string { return fmt.Sprint("p", i) }
	if _, err := q.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: ids(5, short)}); err != nil {
		t.Fatalf("five policies: %v", err)
	}
	if _, err := q.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: ids(6, short)}); sasCode(err) != "400 InvalidXmlDocument" {
		t.Fatalf("six policies: %v", err)
	}
	long := func(int) string { return strings.Repeat("x", 65) }
	if _, err := q.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: ids(1, long)}); sasCode(err) != "400 InvalidXmlDocument" {
		t.Fatalf("a 65-character identifier: %v", err)
	}
	if got, err := q.GetAccessPolicy(ctx, nil); err != nil || len(got.SignedIdentifiers) != 5 {
		t.Fatalf("a refused Set ACL changed the list: %v", err)
	}
	// The policy's fields are optional, a table's too (Azurite 3.37
	// refuses a table policy without all three; the docs do not).
	tc := fake.NewTableService(nil).NewClient("acl", nil)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := tc.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{ID: strp("p"), AccessPolicy: &aztables.AccessPolicy{Permission: &perm}}}})
	if err != nil {
		t.Fatalf("a table policy of permissions only: %v", err)
	}
}

// A field set both in the token and in its stored access policy refuses
// the token ("Define a stored access policy").
func TestPolicyAndTokenOverlap(t *testing.T) {
	ctx := context.Background()
	svc := fake.NewQueueService(&fake.QueueServiceOptions{AccountName: "devstoreaccount1", AccountKey: sasKey})
	admin := svc.NewQueueClient("overlap", nil)
	if _, err := admin.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pol := sas.NewQueuePolicies(admin)
	if err := pol.Create(ctx, sas.Policy[sas.QueuePermissions]{ID: "adders", Permissions: sas.QueuePermissions{Add: true}}, nil); err != nil {
		t.Fatal(err)
	}
	cred, _ := sas.NewCredential("devstoreaccount1", sasKey)
	put := func(v sas.Queue) error {
		tok, err := v.Sign(cred)
		if err != nil {
			t.Fatal(err)
		}
		o := &azqueue.ClientOptions{}
		o.Transport = svc
		c, _ := azqueue.NewQueueClientWithNoCredential(svc.URL()+"overlap?"+tok, o)
		_, err = c.EnqueueMessage(ctx, "m", nil)
		return err
	}
	expiry := time.Now().Add(time.Hour)
	if err := put(sas.Queue{Queue: "overlap", Identifier: "adders", Expiry: expiry}); err != nil {
		t.Fatalf("permissions from the policy, expiry from the token: %v", err)
	}
	if got := sasCode(put(sas.Queue{Queue: "overlap", Identifier: "adders", Expiry: expiry, Permissions: sas.QueuePermissions{Add: true}})); got != "403 AuthenticationFailed" {
		t.Fatalf("permissions in both: %s", got)
	}
	if got := sasCode(put(sas.Queue{Queue: "overlap", Identifier: "adders"})); got != "403 AuthenticationFailed" {
		t.Fatalf("no expiry anywhere: %s", got)
	}
}

// A token that starts in the future, and the signed IP against ClientIP.
func TestSASWindowIPAndAccountVersion(t *testing.T) {
	ctx := context.Background()
	svc := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: sasKey, ClientIP: netip.MustParseAddr("10.0.0.7")})
	admin := svc.NewClient("win", nil)
	if _, err := admin.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil); err != nil {
		t.Fatal(err)
	}
	cred, _ := sas.NewCredential("devstoreaccount1", sasKey)
	read := func(tok string) error {
		o := &aztables.ClientOptions{}
		o.Transport = svc
		c, _ := aztables.NewClientWithNoCredential(svc.URL()+"win?"+tok, o)
		_, err := c.GetEntity(ctx, "p", "1", nil)
		return err
	}
	r := sas.TablePermissions{Read: true}
	later, _ := sas.Table{Table: "win", Permissions: r, Start: time.Now().Add(time.Hour), Expiry: time.Now().Add(2 * time.Hour)}.Sign(cred)
	if got := sasCode(read(later)); got != "403 AuthenticationFailed" {
		t.Fatalf("a token that starts in an hour: %s", got)
	}
	in, _ := sas.Table{Table: "win", Permissions: r, Expiry: time.Now().Add(time.Hour), IPRange: sas.IPRange{Start: netip.MustParseAddr("10.0.0.1"), End: netip.MustParseAddr("10.0.0.9")}}.Sign(cred)
	if err := read(in); err != nil {
		t.Fatalf("from 10.0.0.7 with sip=10.0.0.1-10.0.0.9: %v", err)
	}
	out, _ := sas.Table{Table: "win", Permissions: r, Expiry: time.Now().Add(time.Hour), IPRange: sas.IPRange{Start: netip.MustParseAddr("127.0.0.1")}}.Sign(cred)
	if got := sasCode(read(out)); got != "403 AuthorizationSourceIPMismatch" {
		t.Fatalf("from 10.0.0.7 with sip=127.0.0.1: %s", got)
	}
}

// Tokens the SDK signers make (azblob: version 2026-12-06, whose string
// to sign carries the encryption scope) authenticate on the fake: its
// verification follows the service's, not only tablekit's builder.
func TestSDKSignedTokens(t *testing.T) {
	ctx := context.Background()
	svc := fake.NewBlobService(&fake.BlobServiceOptions{AccountName: "devstoreaccount1", AccountKey: sasKey})
	admin := svc.NewClient(nil)
	if _, err := admin.CreateContainer(ctx, "docs", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UploadBuffer(ctx, "docs", "a.txt", []byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	skc, err := azblob.NewSharedKeyCredential("devstoreaccount1", sasKey)
	if err != nil {
		t.Fatal(err)
	}
	account, err := blobsas.AccountSignatureValues{Protocol: blobsas.ProtocolHTTPS, ExpiryTime: time.Now().Add(time.Hour), Permissions: "r", ResourceTypes: "o"}.SignWithSharedKey(skc)
	if err != nil {
		t.Fatal(err)
	}
	service, err := blobsas.BlobSignatureValues{Protocol: blobsas.ProtocolHTTPS, ExpiryTime: time.Now().Add(time.Hour), Permissions: "r", ContainerName: "docs", BlobName: "a.txt"}.SignWithSharedKey(skc)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"account": account.Encode(), "service": service.Encode()} {
		o := &azblob.ClientOptions{}
		o.Transport = svc
		c, _ := azblob.NewClientWithNoCredential(svc.URL()+"?"+tok, o)
		if _, err := c.DownloadStream(ctx, "docs", "a.txt", nil); err != nil {
			t.Errorf("%s SAS from the SDK: %v", name, err)
		}
		if _, err := c.UploadBuffer(ctx, "docs", "a.txt", []byte("b"), nil); sasCode(err) != "403 AuthorizationPermissionMismatch" {
			t.Errorf("%s SAS from the SDK writes with r: %v", name, err)
		}
	}
}

func strp(s string) *string { return &s }
