// Package conformance is the contract between tablekit and the services it
// runs on: one list of behaviours, each run against the in-memory fake and
// against Azurite (or a real account). A case that passes on one backend and
// fails on the other is a bug in the fake. Where Azurite is laxer than the
// documented service, a case checks that tablekit refuses the input before
// sending anything, which holds on every backend. Where a backend lacks a
// documented behaviour altogether, its Env says so with a Capability and a
// reason, and the case prints "not run on <backend>: <reason>" instead of
// passing in silence (see Capabilities and CapabilityTable).
//
// The suite is exported so that you can run it too, as testing/slogtest
// and gocloud.dev's drivertest are: one function taking a *testing.T and a
// backend. RunAll runs every suite as a subtest, each on a fresh Env from
// the function it is given; RunTable, RunBatch and the other RunXxx run one
// suite on one Env.
//
// # Against your own account
//
// In a _test.go file of your module:
//
//	func TestTablekitOnMyAccount(t *testing.T) {
//		cs := os.Getenv("MY_CONNECTION_STRING")
//		if cs == "" {
//			t.Skip("MY_CONNECTION_STRING is not set")
//		}
//		conformance.RunAll(t, func(t *testing.T) conformance.Env {
//			return conformance.AccountEnv(t, cs, nil)
//		})
//	}
//
// The connection string is the account's, with its key (the portal's
// "Access keys" page); the key signs the SAS tokens the SAS cases make.
// Every case creates its own uniquely named tables, queues and containers
// (names start with conf, sas, wire, meta, never, Logins or Periods, then
// random hex) and deletes them when it ends; a run that is killed can leave
// some behind, which you can find by those prefixes. Nothing else in the
// account is read or written. The cost is that of the transactions (billed
// per 10,000) and of a few megabytes stored for minutes: the large-entity
// and blob cases upload blobs of a few MiB. A run takes minutes, not
// seconds: on a real backend Env.Advance sleeps, so the time-driven cases
// (visibility timeouts, leases, names being deleted) wait in real time.
// Pass lacks to name what your backend does otherwise than the documented
// service (AzuriteLacks for Azurite); an account of the service itself
// lacks nothing (nil).
//
// # Against your own implementation
//
// A backend is an Env: its function fields make fresh clients (built with
// the Counter's options, so that the cases can count requests) for tables,
// queues, containers and the services; Suite.Needs lists which fields each
// suite calls, and RunAll reports a suite whose needs are nil as not run.
// A backend that serves the official clients' HTTP requests (a fake, an
// emulator, a proxy) is plugged in through the clients' Transport, as
// FakeEnv does for package fake. Set Env.Name: the output names the backend
// with it.
//
// # Long cases
//
// Soaks and exhaustive matrices run only when TABLEKIT_LONG=1 is set; they
// say so otherwise.
package conformance
