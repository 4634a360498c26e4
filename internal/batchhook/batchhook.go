// Package batchhook is the one link from package batch to
// internal/batchraw, through which tablekit's own packages (patterns and
// the tests) build a transaction operation on an entity already encoded as
// the service's JSON, which batch keeps off its public surface.
//
// internal/batchraw, whose signature names batch's types, cannot be
// imported by batch. So batch, which imports this package, sets Raw once
// in its init, before main runs; nothing writes it after. It is, with
// internal/tablehook's Link, the only package-level variable of its kind
// in tablekit.
package batchhook

import "github.com/Azure/azure-sdk-for-go/sdk/azcore"

// Raw returns a batch.Op of the batch.Kind kind on entity, guarded by
// ifMatch (nil: any version). Set by package batch's init.
var Raw func(kind int, entity []byte, ifMatch *azcore.ETag) any
