// Package keys builds, parses and validates the strings that Azure Table
// Storage sorts and partitions by: compound keys (the guide's "000123_2012"),
// an order-preserving tuple encoding for arbitrary strings, fixed-width and
// descending numbers, .NET-compatible ticks and inverted ticks for the log
// tail pattern, prefix ranges, stable shard buckets for spreading hot
// partitions, and table names per period for the high-volume delete pattern.
// It does no I/O and imports nothing from Azure, so it is safe anywhere.
//
// The service stores entities in PartitionKey, RowKey order, comparing keys
// ordinally, and every efficient query is a point or a range over that order
// ("Design for querying", "Key design" in the Table design guide:
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-guide).
// So every encoder here promises that string order equals the order of what
// it encodes, and every validator refuses, with a *ValidationError that
// names the rule and the position, what the service would refuse: keys over
// 1 KiB of UTF-16, the characters / \ # ? and control characters in keys,
// and malformed table, queue, container, blob and property names. Compare is
// the service's order, for code that must sort like it.
package keys
