package eventstream

// streamOf is head's stream, or "" for a nil head.
func streamOf(head *Head) string {
	if head == nil {
		return ""
	}
	return head.stream
}
