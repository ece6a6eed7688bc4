package storage

import (
	"bytes"
	"context"
	"errors"
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
// Puts: at most cap(free) buffers of size bytes ever exist. A buffer is
// made the first time it is needed and reused after; get waits for a free
// one when all exist and are in use, so the bytes the backend holds for
// uploads never exceed S3Options.UploadBufferBytes, however many Puts run
// at once. Safe for concurrent use.
type partPool struct {
	size      int64
	free      chan []byte // nil entries stand for buffers not made yet
	allocated atomic.Int64
	inUse     atomic.Int64
	peakInUse atomic.Int64
}

func newPartPool(size int64, n int) *partPool {
	p := &partPool{size: size, free: make(chan []byte, n)}
	for range n {
		p.free <- nil
	}
	return p
}

// get returns a buffer of p.size bytes, waiting for one to be put back
// when all are in use; it fails only when ctx is done first.
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
	if b == nil {
		b = make([]byte, p.size)
		p.allocated.Add(1)
	}
	n := p.inUse.Add(1)
	for {
		peak := p.peakInUse.Load()
		if n <= peak || p.peakInUse.CompareAndSwap(peak, n) {
			break
		}
	}
	return b, nil
}

// put gives back a buffer that get returned.
func (p *partPool) put(b []byte) {
	p.inUse.Add(-1)
	p.free <- b[:cap(b)]
}

// readPart fills buf from body and returns the bytes read; a body that
// ends (io.EOF) is not an error, a body that fails is (body.err).
func readPart(body *sizeReader, buf []byte) (int, error) {
	n, err := io.ReadFull(body, buf)
	if body.err != nil {
		return n, body.err
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return n, err
	}
	return n, nil
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
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.fullKey(key)),
		Body:              r,
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	return size, err
}

// putStream sends body: its first PartSize bytes are read into a part
// buffer; less than that is one PutObject, PartSize or more a multipart
// upload (putMultipart). It returns the bytes sent.
func (s *S3) putStream(ctx context.Context, key string, body *sizeReader) (int64, error) {
	buf, err := s.parts.get(ctx)
	if err != nil {
		return 0, err
	}
	n, err := readPart(body, buf)
	if err != nil {
		s.parts.put(buf)
		return int64(n), err
	}
	if int64(n) < s.partSize {
		defer s.parts.put(buf)
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(s.fullKey(key)),
			Body:              bytes.NewReader(buf[:n]),
			ContentLength:     aws.Int64(int64(n)),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
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
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(fullKey),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
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
	upload := func(num int32, buf []byte, n int) {
		defer wg.Done()
		defer func() { <-inFlight }()
		defer s.parts.put(buf)
		out, err := s.client.UploadPart(upCtx, &s3.UploadPartInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(fullKey),
			UploadId:          aws.String(uploadID),
			PartNumber:        aws.Int32(num),
			Body:              bytes.NewReader(buf[:n]),
			ContentLength:     aws.Int64(int64(n)),
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
	buf, n := first, len(first)
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
		sent += int64(n)
		wg.Add(1)
		go upload(num, buf, n)
		if int64(n) < s.partSize {
			break
		}
		if buf, err = s.parts.get(upCtx); err != nil {
			fail(err)
			break
		}
		if n, err = readPart(body, buf); err != nil {
			s.parts.put(buf)
			fail(err)
			break
		}
		if n == 0 {
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
		_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(s.bucket),
			Key:             aws.String(fullKey),
			UploadId:        aws.String(uploadID),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if err == nil {
			return sent, nil
		}
		firstErr = fmt.Errorf("complete multipart upload %s: %w", uploadID, err)
	}
	if aerr := s.abortUpload(ctx, fullKey, uploadID); aerr != nil {
		firstErr = fmt.Errorf("%w (and aborting multipart upload %s failed: %v; AbortStaleUploads removes it later)", firstErr, uploadID, aerr)
	}
	return sent, firstErr
}
