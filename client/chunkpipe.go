package client

import (
	"io"
	"sync"
)

// chunkPipe is the in-process transport's body: a pipe that hands each of
// the handler's writes to the reader as it is, without a copy, and lets
// io.Copy (WriteTo) pass it on in one write. Like io.Pipe, a Write returns
// once the reader took all of it, so the handler's buffer is free again.
type chunkPipe struct {
	data   chan []byte   // the writer's chunks; closed when it is done
	done   chan struct{} // the reader took the whole chunk
	closed chan struct{} // the reader closed the pipe
	once   sync.Once
	werr   error  // why the writer is done (io.EOF: the whole answer), set before data is closed
	cur    []byte // what is left of the chunk the reader holds
	held   bool   // the reader holds a chunk it has not acknowledged
}

func newChunkPipe() *chunkPipe {
	return &chunkPipe{data: make(chan []byte), done: make(chan struct{}), closed: make(chan struct{})}
}

// Write hands b to the reader and waits until it took all of it.
func (p *chunkPipe) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	select {
	case p.data <- b:
	case <-p.closed:
		return 0, io.ErrClosedPipe
	}
	select {
	case <-p.done:
		return len(b), nil
	case <-p.closed:
		return 0, io.ErrClosedPipe
	}
}

// closeWrite ends the answer: err nil is its whole end, else the reader
// gets err after the bytes written.
func (p *chunkPipe) closeWrite(err error) {
	if err == nil {
		err = io.EOF
	}
	p.werr = err
	close(p.data)
}

// next takes the writer's next chunk.
func (p *chunkPipe) next() error {
	select {
	case b, ok := <-p.data:
		if !ok {
			return p.werr
		}
		p.cur, p.held = b, true
		return nil
	case <-p.closed:
		return io.ErrClosedPipe
	}
}

// took acknowledges a chunk the reader has used up.
func (p *chunkPipe) took() {
	if len(p.cur) == 0 && p.held {
		p.held = false
		select {
		case p.done <- struct{}{}:
		case <-p.closed:
		}
	}
}

func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if err := p.next(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	p.took()
	return n, nil
}

// WriteTo passes each chunk to w as it comes, in one write.
func (p *chunkPipe) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(p.cur) == 0 {
			if err := p.next(); err == io.EOF {
				return total, nil
			} else if err != nil {
				return total, err
			}
			continue
		}
		n, err := w.Write(p.cur)
		total += int64(n)
		p.cur = p.cur[n:]
		p.took()
		if err != nil {
			return total, err
		}
	}
}

// Close stops the writer: its pending and later writes fail with
// io.ErrClosedPipe.
func (p *chunkPipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}
