// Package conformance is the contract between tablekit and the services it
// runs on: does a backend (the in-memory fake, Azurite, a real account, a
// port implementation of your own) answer as the Azure Table, Queue and
// Blob services do, in every way tablekit relies on? One list of cases,
// run on every backend; a case that passes on one and fails on another is
// a bug in the backend that fails. Where Azurite is laxer than the
// documented service, a case checks that tablekit refuses the input before
// sending anything, which holds on every backend. Where a backend lacks a
// documented behaviour altogether, its Harness says so with a Capability
// and a reason, and the case prints "not run on <backend>: <reason>"
// instead of passing in silence (RELIABILITY.md tabulates them for the fake and Azurite).
//
// It is shaped as gocloud.dev's drivertest and testing/slogtest are: one
// entry point, RunConformanceTests, taking a *testing.T and a function
// that makes a fresh Harness (the backend's service clients, what the SAS
// cases sign with, its clock and what it lacks) for each suite. tablekit's
// own behaviour on a backend (patterns, the entity model, workers, event
// streams…) is tested by its packages' own tests, not here.
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
//		conformance.RunConformanceTests(t, func(t *testing.T) conformance.Harness {
//			return conformance.AccountHarness(t, cs, nil)
//		})
//	}
//
// The connection string is the account's, with its key (the portal's
// "Access keys" page); the key signs the SAS tokens the SAS cases make.
// Every case creates its own uniquely named tables, queues and containers
// (names start with conf, sas, sasb or wire, then random hex) and deletes
// them when it ends; a run that is killed can leave some behind, which you
// can find by those prefixes. Nothing else in the account is read or
// written. The cost is that of the transactions (billed per 10,000) and
// of a few megabytes stored for minutes. A run takes minutes, not seconds:
// on a real backend Advance sleeps, so the time-driven cases (visibility
// timeouts, leases, names being deleted) wait in real time. Pass lacks to
// name what your backend does otherwise than the documented service
// (AzuriteLacks for Azurite); an account of the service itself lacks
// nothing (nil). Set Harness.Second to a second account to run the cases
// that route between two.
//
// # Against your own implementation
//
// Fill a Harness: its TableService, QueueService and BlobService return
// clients of your backend built with the options the cases give (they
// carry the policies that count requests), so a backend that serves the
// official clients' HTTP requests (a fake, an emulator, a proxy) is
// plugged in through the options' Transport. A suite that needs a field
// you leave nil is reported as not run, with the field. Set Harness.Name:
// the output names the backend with it.
package conformance
