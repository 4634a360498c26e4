package table

// Limits of the service ("Understanding the Table service data model",
// "Querying tables and entities"), checked before any request is sent.
const (
	// MaxUserProperties is the most properties an entity may carry besides
	// PartitionKey, RowKey and Timestamp (255 in all).
	MaxUserProperties = 252
	// MaxEntityBytes is the largest entity, measured the way the service
	// measures it (see Entity.Size).
	MaxEntityBytes = 1 << 20
	// MaxStringUTF16 is the longest string property: 64 KiB of UTF-16.
	MaxStringUTF16 = 32 * 1024
	// MaxBinaryBytes is the largest binary property.
	MaxBinaryBytes = 64 * 1024
	// MaxPageSize is the most entities one query response holds, and the
	// largest $top.
	MaxPageSize = 1000
	// MaxFilterComparisons is the most comparisons one $filter may hold.
	MaxFilterComparisons = 15
)

// minDateTime is the earliest Edm.DateTime the service stores (1601-01-01Z).
const minDateTimeUnix = -11644473600
