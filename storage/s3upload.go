package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// maxS3Parts is the largest number of parts of one multipart upload
// (10 000: "Amazon S3 multipart upload limits" in the S3 User Guide).
const maxS3Parts = 10000

// partPool holds the part buffers of one S3 backend, shared by all its
// Puts: at most cap(free) buffers, each at most size bytes, ever exist. A
// buffer is made the first time it is needed, grows (fill) only as far as
// the data read into it, and is kept for reuse; get waits for a free one
// when all exist and are in use, so the bytes the backend holds for
// uploads never exceed S3Options.UploadBufferBytes, however many Puts run
// at once. Safe for concurrent use.
type partPool struct {
	size      int64
	free      chan []byte // nil entries stand for buffers not made yet
	made      atomic.Int64
	bytes     atomic.Int64 // the capacity of all buffers made
	inUse     atomic.Int64
	peakInUse atomic.Int64
}

// A part buffer starts at minPartBuffer bytes, grows to midPartBuffer,
// then to the part size (fill), so that small objects (the segments of
// small partitions, most below 1 MiB) keep small buffers, and a full
// part costs at most 1.25 MiB of buffers outgrown on the way, once.
const (
	minPartBuffer = 256 << 10
	midPartBuffer = 1 << 20
)

func newPartPool(size int64, n int) *partPool {
	p := &partPool{size: size, free: make(chan []byte, n)}
	for range n {
		p.free <- nil
	}
	return p
}

// get returns a buffer of length 0 and a capacity up to p.size (nil when
// it is not made yet: fill makes it), waiting for one to be put back when
// all are in use; it fails only when ctx is done first.
func (p *partPool) get(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var b []byte
	select {
	case b = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	n := p.inUse.Add(1)
	for {
		peak := p.peakInUse.Load()
		if n <= peak || p.peakInUse.CompareAndSwap(peak, n) {
			break
		}
	}
	return b[:0], nil
}

// put gives back a buffer that get (and fill) returned.
func (p *partPool) put(b []byte) {
	p.inUse.Add(-1)
	p.free <- b[:0]
}

// fill reads body into b, a buffer from get, until b holds p.size bytes
// or body ends (io.EOF, not an error), growing b as needed (minPartBuffer,
// midPartBuffer, p.size; straight to p.size when full, as for the later
// parts of a multipart upload); it returns b (the grown one: give that
// back). A body that fails is an error (body.err).
func (p *partPool) fill(body *sizeReader, b []byte, full bool) ([]byte, error) {
	b = b[:0]
	for {
		if len(b) == cap(b) {
			if int64(len(b)) >= p.size {
				return b, nil
			}
			if b == nil {
				p.made.Add(1)
			}
			next := p.size
			switch {
			case full:
			case cap(b) < minPartBuffer:
				next = minPartBuffer
			case cap(b) < midPartBuffer:
				next = midPartBuffer
			}
			grown := make([]byte, len(b), min(next, p.size))
			copy(grown, b)
			p.bytes.Add(int64(cap(grown) - cap(b)))
			b = grown
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case body.err != nil:
			return b, body.err
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		}
	}
}

// putSmall sends an object of known size below PartSize whose reader can
// seek (a manifest, a progress manifest, a lock, a report) with one
// PutObject straight from r: no part buffer, no copy. The SDK seeks r back
// to retry. r must hold exactly size bytes from its current position.
func (s *S3) putSmall(ctx context.Context, key string, r io.ReadSeeker, size int64) (int64, error) {
	pos, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("read object data: %w", err)
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("read object data: %w", err)
	}
	if _, err := r.Seek(pos, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read object data: %w", err)
	}
	switch n := end - pos; {
	case n > size:
		return 0, fmt.Errorf("reader yielded more than the declared size of %d bytes", size)
	case n < size:
		return 0, fmt.Errorf("reader ended after %d of the declared %d bytes: %w", n, size, io.ErrUnexpectedEOF)
	}
	out, err := s.client.PutObject(ctx, s.writes.putObject(key, &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.fullKey(key)),
		Body:              r,
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	}))
	if err == nil {
		s.writes.confirm(key, out.ServerSideEncryption)
	}
	return size, err
}

// putStream sends body: its first PartSize bytes are read into a part
// buffer (partPool.fill); less than that is one PutObject, PartSize or more a multipart
// upload (putMultipart). It returns the bytes sent.
func (s *S3) putStream(ctx context.Context, key string, body *sizeReader) (int64, error) {
	buf, err := s.parts.get(ctx)
	if err != nil {
		return 0, err
	}
	buf, err = s.parts.fill(body, buf, false)
	if err != nil {
		s.parts.put(buf)
		return int64(len(buf)), err
	}
	if n := len(buf); int64(n) < s.partSize {
		defer s.parts.put(buf)
		out, err := s.client.PutObject(ctx, s.writes.putObject(key, &s3.PutObjectInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(s.fullKey(key)),
			Body:              bytes.NewReader(buf),
			ContentLength:     aws.Int64(int64(n)),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		}))
		if err == nil {
			s.writes.confirm(key, out.ServerSideEncryption)
		}
		return int64(n), err
	}
	return s.putMultipart(ctx, key, body, buf)
}

// putMultipart uploads body as a multipart upload whose first part is the
// full buffer first (a part buffer, which it gives back): up to
// UploadConcurrency parts in flight while the next is read, each part's
// buffer from the shared pool and back to it when its UploadPart has
// ended, each part with a CRC32 checksum. On failure the upload is
// aborted (abortUpload) and the first error returned: the body's, else
// the first failed request's.
func (s *S3) putMultipart(ctx context.Context, key string, body *sizeReader, first []byte) (int64, error) {
	fullKey := s.fullKey(key)
	created, err := s.client.CreateMultipartUpload(ctx, s.writes.createMultipart(key, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(fullKey),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	}))
	if err != nil {
		s.parts.put(first)
		return 0, err
	}
	uploadID := aws.ToString(created.UploadId)
	upCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		parts    []types.CompletedPart
		sent     int64
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	inFlight := make(chan struct{}, s.uploadConcurrency)
	upload := func(num int32, buf []byte) {
		defer wg.Done()
		defer func() { <-inFlight }()
		defer s.parts.put(buf)
		out, err := s.client.UploadPart(upCtx, &s3.UploadPartInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(fullKey),
			UploadId:          aws.String(uploadID),
			PartNumber:        aws.Int32(num),
			Body:              bytes.NewReader(buf),
			ContentLength:     aws.Int64(int64(len(buf))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			fail(fmt.Errorf("multipart upload %s: part %d: %w", uploadID, num, err))
			return
		}
		mu.Lock()
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
		mu.Unlock()
	}
	buf := first
	for num := int32(1); ; num++ {
		select {
		case inFlight <- struct{}{}:
		case <-upCtx.Done():
		}
		if err := upCtx.Err(); err != nil {
			s.parts.put(buf)
			fail(err) // a part failed first, or ctx is done
			break
		}
		sent += int64(len(buf))
		wg.Add(1)
		go upload(num, buf)
		if int64(len(buf)) < s.partSize {
			break
		}
		if buf, err = s.parts.get(upCtx); err != nil {
			fail(err)
			break
		}
		if buf, err = s.parts.fill(body, buf, true); err != nil {
			s.parts.put(buf)
			fail(err)
			break
		}
		if len(buf) == 0 {
			s.parts.put(buf)
			break
		}
		if num == maxS3Parts {
			s.parts.put(buf)
			fail(fmt.Errorf("the object is larger than %d parts of %d bytes, the most one S3 multipart upload holds", maxS3Parts, s.partSize))
			break
		}
	}
	wg.Wait()
	if firstErr == nil {
		slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(aws.ToInt32(a.PartNumber) - aws.ToInt32(b.PartNumber)) })
		out, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(s.bucket),
			Key:             aws.String(fullKey),
			UploadId:        aws.String(uploadID),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if err == nil {
			s.writes.confirm(key, out.ServerSideEncryption)
			return sent, nil
		}
		firstErr = fmt.Errorf("complete multipart upload %s: %w", uploadID, err)
	}
	if aerr := s.abortUpload(ctx, fullKey, uploadID); aerr != nil {
		firstErr = fmt.Errorf("%w (and aborting multipart upload %s failed: %v; AbortStaleUploads removes it later)", firstErr, uploadID, aerr)
	}
	return sent, firstErr
}
