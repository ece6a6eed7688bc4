package storage

// PartBuffers reports the part buffers of s's pool: how many were ever
// made, and the most in use at once.
func PartBuffers(s *S3) (allocated, peakInUse int64) {
	return s.parts.allocated.Load(), s.parts.peakInUse.Load()
}
