package patterns

// The options of this package follow one rule (see ARCHITECTURE.md,
// "Option types"): a constructor takes <Type>Options; a method takes
// <Verb>Options, one type per verb shared by every type's method of that
// verb; only a method whose knobs differ from the shared ones takes
// <Type><Verb>Options. A method whose knobs are exactly table's takes
// table's type (table.AddOptions, table.ModifyOptions, table.QueryOptions).
// Each type below has no fields yet: nil is the only value today, and the
// parameter lets knobs be added without breaking callers.

// AddOptions configure IDList.Add (BlobIndex, RemoteIndexEntities).
type AddOptions struct{}

// AllOptions configure ReferenceCache.All.
type AllOptions struct{}

// AppendAtOptions configure BlobLog.AppendAt and LogTail.AppendAt.
type AppendAtOptions struct{}

// AppendOptions configure BlobLog.Append and LogTail.Append.
type AppendOptions struct{}

// BetweenOptions configure LogTail.Between.
type BetweenOptions struct{}

// CloseOptions configure BlobLog.Close.
type CloseOptions struct{}

// ExpireOptions configure RollingTables.Expire.
type ExpireOptions struct{}

// FindOptions configure IntraPartitionIndex.Find.
type FindOptions struct{}

// FlushOptions configure BlobLog.Flush.
type FlushOptions struct{}

// GetLazyOptions configure LargeEntity.GetLazy.
type GetLazyOptions struct{}

// GetOptions configure DataSeries.Get, IntraPartitionIndex.Get, LargeEntity.Get, ReferenceCache.Get and WideEntity.Get.
type GetOptions struct{}

// IDsOptions configure IDList.IDs (BlobIndex, RemoteIndexEntities).
type IDsOptions struct{}

// LatestOptions configure LogTail.Latest.
type LatestOptions struct{}

// LoadOptions configure Lazy.Load.
type LoadOptions struct{}

// LookupEntitiesOptions configure IndexEntities.LookupEntities and Model.LookupEntities.
type LookupEntitiesOptions struct{}

// LookupOptions configure IndexEntities.Lookup, InterPartitionIndex.Lookup and IntraPartitionIndex.Lookup.
type LookupOptions struct{}

// PrefixOptions configure IntraPartitionIndex.Prefix.
type PrefixOptions struct{}

// RangeOptions configure InterPartitionIndex.Range and IntraPartitionIndex.Range.
type RangeOptions struct{}

// ReadOptions configure RelatedRows.Read and BlobLog.Read.
type ReadOptions struct{}

// RemoveOptions configure IDList.Remove (BlobIndex, RemoteIndexEntities) and IndexEntities.Remove.
type RemoveOptions struct{}

// RunOptions configure BlobLog.Run.
type RunOptions struct{}

// SinceOptions configure LogTail.Since.
type SinceOptions struct{}

// SweepOptions configure LargeEntity.Sweep.
type SweepOptions struct{}

// TableForOptions configure RollingTables.TableFor.
type TableForOptions struct{}

// UpdateOptions configure Denormalized.Update and LargeEntity.Update.
type UpdateOptions struct{}

// WriteOptions configure EventualIndexEntities.Write and RelatedRows.Write.
type WriteOptions struct{}
