// Package keys builds and parses the strings that Azure Table Storage
// sorts and partitions by, for code that writes keys by hand: compound
// keys (the guide's "000123_2012"), an order-preserving tuple encoding for
// arbitrary strings, fixed-width numbers, .NET-compatible ticks and
// inverted ticks for the log tail pattern, and table names per period for
// the high-volume delete pattern. It does no I/O and imports nothing from
// Azure, so it is safe anywhere. A struct's declarative keys (package
// table, "Declarative keys") compose the same encodings from its fields,
// so most code never calls this package.
//
// The service stores entities in PartitionKey, RowKey order, comparing keys
// ordinally, and every efficient query is a point or a range over that order
// ("Design for querying", "Key design" in the Table design guide:
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-guide).
// So every encoder here promises that string order equals the order of what
// it encodes. What the service would refuse (keys over 1 KiB of UTF-16, the
// characters / \ # ? and control characters in keys) is a *ValidationError
// that names the rule and the position; tablekit checks every key and name
// it sends by the same rules before any request.
package keys
