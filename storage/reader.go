package storage

import (
	"context"
	"fmt"
	"io"
)

// checkedReader wraps the body of a Put: every Read first checks ctx (so a
// cancelled Put stops promptly, before anything is published), and when
// size >= 0 it fails with io.ErrUnexpectedEOF if r ends early or with an
// error if r yields more than size bytes. Errors are sticky.
func checkedReader(ctx context.Context, r io.Reader, size int64) *sizeReader {
	return &sizeReader{ctx: ctx, r: r, want: size}
}

type sizeReader struct {
	ctx  context.Context
	r    io.Reader
	want int64 // expected size, or -1
	n    int64 // bytes read so far
	err  error
}

func (c *sizeReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	switch {
	case c.want >= 0 && c.n > c.want:
		c.err = fmt.Errorf("reader yielded more than the declared size of %d bytes", c.want)
		return 0, c.err
	case err == io.EOF && c.want >= 0 && c.n < c.want:
		c.err = fmt.Errorf("reader ended after %d of the declared %d bytes: %w", c.n, c.want, io.ErrUnexpectedEOF)
		return n, c.err
	case err != nil && err != io.EOF:
		c.err = fmt.Errorf("read object data: %w", err)
		return n, c.err
	}
	return n, err
}
