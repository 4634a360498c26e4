package keyrules

import "hash/fnv"

// ShardBucket places key in one of n buckets with 32-bit FNV-1a of its UTF-8
// bytes, modulo n. FNV-1a is fixed by its specification, so the bucket of a
// key never changes across versions, platforms or processes. n must be >= 1.
func ShardBucket(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// ShardName is prefix, the separator and bucket zero-padded to the width of
// n-1, so the names of one shard set sort in bucket order: ShardName("events",
// 7, 16) is "events_07".
func ShardName(prefix string, bucket, n int) (string, error) {
	if n < 1 || bucket < 0 || bucket >= n {
		return "", invalid("key", itoa(bucket), ErrOutOfRange, "bucket is 0 to n-1 and n >= 1")
	}
	k := prefix + defaultSeparator + padUint(uint64(bucket), digits(uint64(n-1)))
	if err := checkKey("key", k); err != nil {
		return "", err
	}
	return k, nil
}
