// Package keyrules implements package keys, and holds the service's rules
// for keys and names that tablekit's own packages apply and users do not
// call: the validators of PartitionKeys, RowKeys, property names and table,
// queue, container and blob names; UTF-16 length and the service's ordinal
// order (Compare); the range of .NET's DateTime (CheckTicksRange); the
// encodings behind declared keys (Uint64, the descending numbers); the log
// tail's keys (LogKeys); prefix ranges; shard buckets and names; and the
// parser of period table names. Package keys exposes the builders a user
// writes keys with by hand.
//
// The service stores entities in PartitionKey, RowKey order, comparing keys
// ordinally, and every efficient query is a point or a range over that order
// ("Design for querying", "Key design" in the Table design guide:
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-guide).
// So every encoder here promises that string order equals the order of what
// it encodes, and every validator refuses, with a *ValidationError that
// names the rule and the position, what the service would refuse: keys over
// 1 KiB of UTF-16, the characters / \ # ? and control characters in keys,
// and malformed table, queue, container, blob and property names.
package keyrules
