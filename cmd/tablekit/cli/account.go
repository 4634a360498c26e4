package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/ledger"
)

// commonFlags are accepted before and after the command.
type commonFlags struct {
	conn    string
	account string
	json    bool
	stats   bool
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.conn, "conn", "", "storage connection string (default: $TABLEKIT_CONNECTION_STRING, then $AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&c.account, "account", "", "storage account `name`, signed in with Microsoft Entra ID (azidentity.DefaultAzureCredential)")
	c.registerOutput(fs)
}

// registerOutput registers the flags every command takes: -json and -stats.
func (c *commonFlags) registerOutput(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print results as JSON")
	fs.BoolVar(&c.stats, "stats", false, "print the storage requests the command made (the request ledger) to stderr")
}

// merge keeps what the command's own flags set, and the global ones else.
func (c commonFlags) merge(global commonFlags) commonFlags {
	if c.conn == "" {
		c.conn = global.conn
	}
	if c.account == "" {
		c.account = global.account
	}
	c.json = c.json || global.json
	c.stats = c.stats || global.stats
	return c
}

// cli is what a command runs with: its output, flags and account.
type cli struct {
	out, errOut io.Writer
	flags       commonFlags
	getenv      func(string) string
	accounts    func() (*account, error) // tests: the fakes
	indexes     []Registration           // made by Index
	large       []Registration           // made by Large
	acct        *account
}

// account is the storage account's clients, every request counted in one
// ledger.
type account struct {
	ledger *ledger.Ledger
	table  func(name string) (*aztables.Client, error)
	tables func() (*aztables.ServiceClient, error)
	queue  func(name string) (*azqueue.QueueClient, error)
	blobs  func() (*azblob.Client, error)
}

// open returns the account the flags name, opened once.
func (c *cli) open() (*account, error) {
	if c.acct != nil {
		return c.acct, nil
	}
	var err error
	switch {
	case c.accounts != nil:
		c.acct, err = c.accounts()
	case c.flags.account != "":
		c.acct, err = entraAccount(c.flags.account)
	default:
		conn := c.flags.conn
		for _, v := range []string{"TABLEKIT_CONNECTION_STRING", "AZURE_STORAGE_CONNECTION_STRING"} {
			if conn == "" {
				conn = c.getenv(v)
			}
		}
		if conn == "" {
			return nil, usagef("no account: give -conn, -account, or set TABLEKIT_CONNECTION_STRING")
		}
		c.acct, err = connAccount(conn, nil)
	}
	return c.acct, err
}

// connAccount opens an account by connection string (Azurite, an account
// key, or a SAS): every service's requests go to the endpoint the string
// names (accounts.Connection; the SDK's own constructor sends a SAS
// string's table requests to ACCOUNT.table.core.windows.net). A string
// that cannot be honoured is refused here, before any request. transport
// carries the requests (nil: the SDK's default).
func connAccount(conn string, transport policy.Transporter) (*account, error) {
	c, err := accounts.ParseConnectionString(conn)
	if err != nil {
		return nil, usagef("%v", err)
	}
	l := ledger.New()
	tables := func() (*aztables.ServiceClient, error) {
		o := tableOptions(l)
		o.Transport = transport
		return c.TableService(o)
	}
	return &account{
		ledger: l,
		table: func(name string) (*aztables.Client, error) {
			svc, err := tables()
			if err != nil {
				return nil, err
			}
			return svc.NewClient(name), nil
		},
		tables: tables,
		queue: func(name string) (*azqueue.QueueClient, error) {
			o := &azqueue.ClientOptions{}
			o.Transport = transport
			l.Attach(&o.ClientOptions, ledger.Queue)
			svc, err := c.QueueService(o)
			if err != nil {
				return nil, err
			}
			return svc.NewQueueClient(name), nil
		},
		blobs: func() (*azblob.Client, error) {
			o := &azblob.ClientOptions{}
			o.Transport = transport
			l.Attach(&o.ClientOptions, ledger.Blob)
			return c.BlobService(o)
		},
	}, nil
}

// entraAccount opens ACCOUNT.{table,queue,blob}.core.windows.net with the
// default Entra ID credential chain (environment, workload or managed
// identity, Azure CLI, …).
func entraAccount(name string) (*account, error) {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, err
	}
	l := ledger.New()
	endpoint := func(svc string) string { return fmt.Sprintf("https://%s.%s.core.windows.net/", name, svc) }
	return &account{
		ledger: l,
		table: func(table string) (*aztables.Client, error) {
			return aztables.NewClient(endpoint("table")+table, cred, tableOptions(l))
		},
		tables: func() (*aztables.ServiceClient, error) {
			return aztables.NewServiceClient(endpoint("table"), cred, tableOptions(l))
		},
		queue: func(queue string) (*azqueue.QueueClient, error) {
			o := &azqueue.ClientOptions{}
			l.Attach(&o.ClientOptions, ledger.Queue)
			return azqueue.NewQueueClient(endpoint("queue")+queue, cred, o)
		},
		blobs: func() (*azblob.Client, error) {
			o := &azblob.ClientOptions{}
			l.Attach(&o.ClientOptions, ledger.Blob)
			return azblob.NewClient(endpoint("blob"), cred, o)
		},
	}, nil
}

func tableOptions(l *ledger.Ledger) *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	l.Attach(&o.ClientOptions, ledger.Table)
	return o
}

var _ azcore.TokenCredential = (*azidentity.DefaultAzureCredential)(nil)

// printStats writes the ledger: requests by service, operation and resource.
func (c *cli) printStats(l *ledger.Ledger) {
	entries := l.Entries()
	if c.flags.json {
		type entry struct {
			Service   string `json:"service"`
			Operation string `json:"operation"`
			Resource  string `json:"resource"`
			Partition string `json:"partition,omitempty"`
			Requests  int    `json:"requests"`
		}
		rows := []entry{}
		for _, e := range entries {
			rows = append(rows, entry{string(e.Service), e.Operation, e.Resource, e.Partition, e.Requests})
		}
		_ = json.NewEncoder(c.errOut).Encode(map[string]any{"requests": l.Total(), "retries": l.Retries(), "entries": rows})
		return
	}
	w := tabwriter.NewWriter(c.errOut, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "requests\tservice\toperation\tresource\n")
	for _, e := range entries {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", e.Requests, e.Service, e.Operation, e.Resource)
	}
	fmt.Fprintf(w, "%d\ttotal (%d retries)\t\t\n", l.Total(), l.Retries())
	_ = w.Flush()
}

// emit writes v as JSON when -json is set, and calls text otherwise.
func (c *cli) emit(v any, text func(w io.Writer)) {
	if c.flags.json {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return
	}
	text(c.out)
}
