package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// packer fills data datagrams: resent frames first, then new ones, as
// many as fit. Datagrams that leave back to back in one pass carry the
// continuous-send flag (0x08) after the first, as RakNet's senders set it
// for a burst.
type packer struct {
	maxDatagram  int
	lastSend     time.Time // when the last data datagram left
	lastContinue bool      // frames were left over after it
	resent       uint64    // frames resent
}

// pack appends data datagram number n to b, recording the frames that
// need an acknowledgement in s, and returns b.
func (p *packer) pack(b []byte, now time.Time, n uint64, s *sentDatagram, q *sendQueue) []byte {
	s.frames = s.frames[:0]
	s.retrans = false
	flags := wire.FlagValid | wire.FlagNeedsBAndAS
	if p.lastContinue && now.Equal(p.lastSend) {
		flags |= wire.FlagContinuousSend
	}
	h := wire.DatagramHeader{Flags: flags, Number: u24(n)}
	b = h.Append(b)
	room := p.maxDatagram - wire.DatagramHeaderSize
	for q.resend.len() > 0 {
		ref, _ := q.resend.peek()
		if !ref.live() {
			q.resend.pop()
			continue
		}
		size := ref.f.frame.Size()
		if size > room {
			break
		}
		q.resend.pop()
		room -= size
		b = ref.f.frame.Append(b)
		ref.f.dgram = n
		s.frames = append(s.frames, ref)
		s.retrans = true
		p.resent++
	}
	for q.pending.len() > 0 && q.canSendNew() {
		ref, _ := q.pending.peek()
		f := ref.f
		size := f.frame.Size()
		if size > room {
			break
		}
		q.pending.pop()
		room -= size
		q.take(f)
		b = f.frame.Append(b)
		if f.frame.Reliability.Reliable() || f.msg != nil {
			f.dgram = n
			s.frames = append(s.frames, ref)
		} else {
			q.release(f)
		}
	}
	p.lastContinue = q.hasData()
	p.lastSend = now
	return b
}
