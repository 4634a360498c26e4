package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
)

func fakeEnv() Env {
	svc := fake.NewTableService(nil)
	return Env{
		Name: "fake",
		Fake: svc,
		NewTable: func(t *testing.T, c *reqcount.Counter) *aztables.Client {
			sc := svc.NewServiceClient(c.TableOptions())
			name := testenv.UniqueName("conf")
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			c.Reset()
			return sc.NewClient(name)
		},
	}
}

func azuriteEnv(t *testing.T) Env {
	cs := testenv.ConnectionString(t)
	return Env{
		Name: "azurite",
		NewTable: func(t *testing.T, c *reqcount.Counter) *aztables.Client {
			sc, err := aztables.NewServiceClientFromConnectionString(cs, c.TableOptions())
			if err != nil {
				t.Fatal(err)
			}
			name := testenv.UniqueName("conf")
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), strings.ToLower(name), nil) })
			c.Reset()
			return sc.NewClient(name)
		},
	}
}

func TestTableOnFake(t *testing.T)       { RunTable(t, fakeEnv()) }
func TestTableOnAzurite(t *testing.T)    { RunTable(t, azuriteEnv(t)) }
func TestBatchOnFake(t *testing.T)       { RunBatch(t, fakeEnv()) }
func TestBatchOnAzurite(t *testing.T)    { RunBatch(t, azuriteEnv(t)) }
func TestPatternsOnFake(t *testing.T)    { RunPatterns(t, fakeEnv()) }
func TestPatternsOnAzurite(t *testing.T) { RunPatterns(t, azuriteEnv(t)) }
