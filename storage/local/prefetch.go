package local

import "iter"

// prefetch runs seq on a goroutine of its own, up to n items ahead of the consumer: reading,
// decompressing and building the docs of the next batches then overlaps with FTS5's inserts
// of this one. Everything seq writes is visible to the caller once the returned sequence is
// done (it waits for the goroutine).
func prefetch[T any](seq iter.Seq2[T, error], n int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		type item struct {
			v   T
			err error
		}
		ch := make(chan item, n)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			defer close(ch)
			for v, err := range seq {
				select {
				case ch <- item{v, err}:
				case <-stop:
					return
				}
			}
		}()
		defer func() {
			close(stop)
			for range ch {
			}
			<-done
		}()
		for it := range ch {
			if !yield(it.v, it.err) {
				return
			}
		}
	}
}
