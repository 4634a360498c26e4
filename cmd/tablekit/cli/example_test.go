package cli_test

import (
	"context"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/cmd/tablekit/cli"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Employee is the application's own entity.
type Employee struct {
	table.Meta
	Email string
	Photo []byte
}

// An operator binary of your own: the tablekit commands plus index verify
// and repair for your index, and large sweep for your large entity.
func Example_operatorBinary() {
	conn := os.Getenv("TABLEKIT_CONNECTION_STRING")
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		os.Exit(cli.ExitUsage)
	}
	client := svc.NewClient("Employees")
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		os.Exit(cli.ExitUsage)
	}
	staff, err := patterns.OpenModel(context.Background(), employees, &patterns.ModelOptions[Employee]{Name: "staff", Primary: "empid_", Copies: []patterns.IndexDef[Employee]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
	}})
	if err != nil {
		os.Exit(cli.ExitUsage)
	}
	// The sweep gives open the entities' table and the blobs of the one
	// account the command line names.
	photos := cli.Large("photos", "Employees", "photos", func(t *aztables.Client, b blobstore.Client) (*patterns.LargeEntity[Employee], error) {
		employees, err := table.New[Employee](t, nil)
		if err != nil {
			return nil, err
		}
		return patterns.NewLargeEntity[Employee](employees, b, "photos", []string{"Photo"}, 0, nil)
	})
	code := cli.Main(context.Background(), []string{"index", "verify", "-help"}, &cli.Options{
		Registrations: []cli.Registration{cli.Index("staff", staff), photos},
	})
	_ = code // os.Exit(code) in a real main
}
