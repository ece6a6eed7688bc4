package storage_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

// TestS3ConcurrentPutsAllocateWithinTheBudget is a regression test (issue
// 13: S3 added ~200 MiB to a backup's peak RSS): each Put made its own
// part buffers, PartSize x (UploadConcurrency+1) bytes, plus a copy of its
// first part, so N streaming Puts at once (backup's partition workers)
// allocated N times that. Now every Put of a backend draws from one pool
// of DefaultS3UploadBufferBytes. Eight concurrent Puts of 3 parts each,
// from readers that cannot seek (as backup's pipes), allocate on the Go
// heap at most that budget plus 16 MiB (the SDK's requests, the HTTP
// connections), all of them in the first round and almost nothing in the
// second, which reuses the buffers; each object reads back whole.
// Bytes allocated (runtime.MemStats.TotalAlloc) are counted, not time.
func TestS3ConcurrentPutsAllocateWithinTheBudget(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b := newTestS3(t, srv, storage.S3Options{}) // 5 MiB parts (newTestS3), the default budget
	const puts, size = 8, 3 * 5 << 20
	data := make([][]byte, puts)
	for i := range data {
		data[i] = storagetest.Content(fmt.Sprintf("concurrent-%d", i), size)
	}
	const budget, slack = 48 << 20, 16 << 20
	for round := range 2 {
		allocated := heapAllocated(t, func() {
			var wg sync.WaitGroup
			errs := make([]error, puts)
			for i := range puts {
				wg.Go(func() {
					key := fmt.Sprintf("concurrent/%d/%d", round, i)
					errs[i] = b.Put(t.Context(), key, struct{ io.Reader }{bytes.NewReader(data[i])}, -1)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("round %d: Put %d: %v", round, i, err)
				}
			}
		})
		t.Logf("round %d: %d concurrent Puts of %d bytes allocated %.1f MiB", round, puts, size, float64(allocated)/(1<<20))
		if allocated > budget+slack {
			t.Errorf("round %d: %d concurrent Puts of %d bytes allocated %d bytes (%.1f MiB), more than the %d MiB upload buffer budget + %d MiB",
				round, puts, size, allocated, float64(allocated)/(1<<20), budget>>20, slack>>20)
		}
		if round == 1 && allocated > slack {
			t.Errorf("the second round allocated %.1f MiB: the part buffers of the first were not reused", float64(allocated)/(1<<20))
		}
	}
	for i := range puts {
		got, err := readAll(t, b, fmt.Sprintf("concurrent/1/%d", i))
		if err != nil || !bytes.Equal(got, data[i]) {
			t.Errorf("object %d: read back %d bytes (%v), want the %d put", i, len(got), err, len(data[i]))
		}
	}
}

// heapAllocated returns the bytes the Go heap allocated while f ran.
func heapAllocated(t *testing.T, f func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestS3PartBuffersStayWithinTheBudget: with UploadBufferBytes of n
// parts, any number of concurrent streaming Puts (multipart and single
// PutObject, readers that cannot seek) make at most n part buffers and
// never hold more at once; a budget of one part still lets every Put
// finish (a Put waits only for buffers that are being read or uploaded).
// Objects of known size below PartSize from a seeker take none.
func TestS3PartBuffersStayWithinTheBudget(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	const part = 5 << 20
	for _, n := range []int64{1, 2, 3} {
		t.Run(fmt.Sprintf("%d parts", n), func(t *testing.T) {
			b := newTestS3(t, srv, storage.S3Options{PartSize: part, UploadBufferBytes: n*part + part/2, UploadConcurrency: 2})
			sizes := []int{0, 1, part - 1, part, 2*part + 1, 3 * part}
			var wg sync.WaitGroup
			errs := make([]error, len(sizes))
			for i, size := range sizes {
				wg.Go(func() {
					data := storagetest.Content(fmt.Sprint(i), size)
					errs[i] = b.Put(t.Context(), fmt.Sprintf("budget/%d", i), struct{ io.Reader }{bytes.NewReader(data)}, -1)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("Put of %d bytes: %v", sizes[i], err)
				}
			}
			made, size, peak := storage.PartBuffers(b)
			t.Logf("%d concurrent Puts: %d part buffers made (%d bytes), at most %d in use", len(sizes), made, size, peak)
			if made < 1 || made > n || peak > n || size > n*part {
				t.Errorf("%d part buffers made (%d bytes), %d in use at once; want 1..%d buffers of at most %d bytes (UploadBufferBytes of %d parts)", made, size, peak, n, n*part, n)
			}
			for i, size := range sizes {
				got, err := readAll(t, b, fmt.Sprintf("budget/%d", i))
				if err != nil || !bytes.Equal(got, storagetest.Content(fmt.Sprint(i), size)) {
					t.Errorf("object of %d bytes: read back %d bytes (%v)", size, len(got), err)
				}
			}
			before, _, _ := storage.PartBuffers(b)
			small := storagetest.Content("small", part-1)
			if err := b.Put(t.Context(), "budget/small", bytes.NewReader(small), int64(len(small))); err != nil {
				t.Fatal(err)
			}
			if got, err := readAll(t, b, "budget/small"); err != nil || !bytes.Equal(got, small) {
				t.Errorf("small object: read back %d bytes (%v)", len(got), err)
			}
			if after, _, _ := storage.PartBuffers(b); after != before {
				t.Errorf("a Put of %d bytes from a bytes.Reader made a part buffer", len(small))
			}
		})
	}
}

// TestS3SmallStreamingPutsKeepSmallBuffers: streaming Puts of small
// objects (the segments of many small partitions, of unknown size until
// their pipe closes) make part buffers only as large as the data they
// read, 256 KiB for objects up to that, not a whole part each: with
// 2,000 partitions the pool of whole parts stayed full and live.
func TestS3SmallStreamingPutsKeepSmallBuffers(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b := newTestS3(t, srv, storage.S3Options{PartSize: 8 << 20, UploadBufferBytes: 48 << 20})
	const puts, size = 40, 100 << 10
	var wg sync.WaitGroup
	errs := make([]error, puts)
	for i := range puts {
		wg.Go(func() {
			data := storagetest.Content(fmt.Sprint("small-", i), size)
			errs[i] = b.Put(t.Context(), fmt.Sprintf("small/%d", i), struct{ io.Reader }{bytes.NewReader(data)}, -1)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	made, held, peak := storage.PartBuffers(b)
	t.Logf("%d concurrent Puts of %d bytes: %d part buffers made (%d bytes), at most %d in use", puts, size, made, held, peak)
	if made > 6 || held > made*256<<10 {
		t.Errorf("%d part buffers of %d bytes in all for objects of %d bytes; want at most 6 (the budget) of 256 KiB", made, held, size)
	}
}
