// Package accounts spreads a table's partitions over several storage
// accounts, as the Table design guide advises past one account's target of
// 20,000 entities per second ("Scalability targets"; the performance
// checklist's "maximum number of storage accounts" and "targets for data
// operations"): a Router maps each PartitionKey (or a key derived from it)
// to one account by rendezvous hashing, so accounts can be added later and
// only the keys the new account wins move, about 1/(N+1) of them.
//
// Each account has its own tune.Limiter in its clients' pipeline, so every
// account is kept under its own targets. Package table, batch and patterns
// work through the Router unchanged: Table gives the *aztables.Client of the
// key's account, Write splits a bulk write by account and runs a
// batch.Writer per account. A pattern value per account (an event store,
// a model) is built over each of Accounts' clients and found by For.
//
// Everything of one PartitionKey stays in one account, so entity group
// transactions (which cannot span accounts) keep working.
//
// # Adding an account
//
// Growing from N to N+1 accounts moves the partitions the new account
// wins; a Migration between the two Routers moves them, on this path:
//
//  1. Create the tables in the new account (Router.CreateTable on the new
//     Router).
//  2. Readers switch to Migration.ReadOrder: for a moved key, the old
//     account first, then the new one. A partition is always whole in one
//     of them or being copied, and the old account keeps the newest copy
//     until its delete.
//  3. Writers of the keys that move (Migration.Moved tells them; about
//     1/(N+1)) pause or queue, and Migration.MoveTable runs: it copies each
//     moved partition to its new account, then deletes it from the old one
//     guarded by the ETags it copied. A write that slipped into the old
//     account during the copy makes its delete fail with 412: nothing is
//     lost, the entity stays in the old account and MoveTable reports it
//     (ErrChangedDuringMove); run it again.
//  4. When MoveTable moves nothing, everyone switches to the new Router,
//     and the writers resume.
//
// The one change a move cannot see is a delete of a moved entity after it
// was copied: the copy stays in the new account. That is why the writers of
// moving keys pause; deletes are writes too. Keys that do not move are
// never paused, read or written by the migration.
package accounts
