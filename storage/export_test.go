package storage

// PartBuffers reports the part buffers of s's pool: how many were ever
// made, their capacity in bytes, and the most in use at once.
func PartBuffers(s *S3) (made, bytes, peakInUse int64) {
	return s.parts.made.Load(), s.parts.bytes.Load(), s.parts.peakInUse.Load()
}
