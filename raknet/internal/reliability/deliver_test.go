package reliability

import "time"

// Tests written against a delivery function hand a layer's deliveries to
// its sink, as a connection's pass does: after each call that may
// deliver, every message the layer delivered goes to the sink in order,
// and one the sink does not keep (it returns false) is given back at once
// with Release. A layer without a sink gives back everything.

// sinkLayer is a Layer with its sink, kept beside the Layer rather than
// in it so that the type carries nothing for tests.
type sinkLayer struct {
	*Layer
	sink func(msg []byte, owned bool) bool
}

// withSink returns l with sink.
func withSink(l *Layer, sink func(msg []byte, owned bool) bool) *sinkLayer {
	return &sinkLayer{Layer: l, sink: sink}
}

// handleT is HandleDatagram, then the deliveries to the sink.
func (l *sinkLayer) handleT(now time.Time, b []byte) error {
	err := l.HandleDatagram(now, b)
	l.deliverT()
	return err
}

// consumedT is Consumed, then the deliveries to the sink.
func (l *sinkLayer) consumedT(now time.Time, size int) {
	l.Consumed(now, size)
	l.deliverT()
}

// deliverT hands what r delivered to sink, giving back at once what it
// does not keep.
func (r *receiver) deliverT(sink func(msg []byte, owned bool) bool) {
	for {
		d, ok := r.take()
		if !ok {
			return
		}
		if !sink(d.msg, d.owned) {
			r.consumed(len(d.msg))
		}
	}
}

// deliverT hands what l delivered to its sink.
func (l *sinkLayer) deliverT() {
	for {
		msg, owned, ok := l.Next()
		if !ok {
			return
		}
		if l.sink == nil || !l.sink(msg, owned) {
			l.Release(len(msg))
		}
	}
}
