package raknet

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// pingRetry is the wait between unconnected pings.
const pingRetry = 250 * time.Millisecond

// maxDiscovered bounds the answers a discovery keeps: a broadcast on a
// big network (or a flood of forged pongs) cannot grow it without bound.
const maxDiscovered = 4096

// Pong is one server's answer to an unconnected ping.
type Pong struct {
	// Addr is where the answer came from (IPv4 unmapped).
	Addr netip.AddrPort
	// GUID is the server's GUID.
	GUID int64
	// Data is the pong's payload as the server sent it (for Bedrock, the
	// MOTD).
	Data []byte
	// RTT is the round trip of the ping it answers: exact for the latest
	// ping, to the millisecond for an earlier one.
	RTT time.Duration
}

// Discover sends unconnected pings to every target, unicast or broadcast
// ("255.255.255.255:19132", "127.255.255.255:19132"), at once and every
// 250 ms, and returns every answer that arrives before ctx ends, the first
// from each address, sorted by address. Without a deadline on ctx it
// listens for 10 s. IPv4 and IPv6 targets are pinged from one socket per
// family. It fails only if no ping could be sent and nothing answered.
func (d Dialer) Discover(ctx context.Context, targets ...string) ([]Pong, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if len(targets) == 0 {
		return nil, &net.OpError{Op: "discover", Net: "raknet", Err: errors.New("no targets")}
	}
	var v4, v6 []netip.AddrPort
	for _, t := range targets {
		ua, err := net.ResolveUDPAddr("udp", t)
		if err != nil {
			return nil, &net.OpError{Op: "discover", Net: "raknet", Err: err}
		}
		if ap := key(ua.AddrPort()); ap.Addr().Is4() {
			v4 = append(v4, ap)
		} else {
			v6 = append(v6, ap)
		}
	}
	type result struct {
		pongs []Pong
		err   error
	}
	results := make(chan result, 2)
	run := 0
	for _, fam := range []struct {
		network, local string
		targets        []netip.AddrPort
	}{{"udp4", "0.0.0.0:0", v4}, {"udp6", "[::]:0", v6}} {
		if len(fam.targets) == 0 {
			continue
		}
		run++
		go func() {
			listen := d.ListenPacket
			if listen == nil {
				listen = net.ListenPacket
			}
			// Broadcast needs nothing more: Go sets SO_BROADCAST on every
			// UDP socket it opens.
			pc, err := listen(fam.network, fam.local)
			if err != nil {
				results <- result{err: err}
				return
			}
			ep := newEndpoint(pc)
			defer ep.close()
			pongs, err := discover(ctx, ep, fam.targets, d.GUID, 0)
			results <- result{pongs, err}
		}()
	}
	var all []Pong
	var errs []error
	for range run {
		r := <-results
		all = append(all, r.pongs...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if len(all) == 0 && len(errs) > 0 {
		return nil, &net.OpError{Op: "discover", Net: "raknet", Err: errors.Join(errs...)}
	}
	slices.SortFunc(all, func(a, b Pong) int { return a.Addr.Compare(b.Addr) })
	return all, nil
}

// discover pings targets from ep every pingRetry until ctx ends or, with
// want > 0, want answers from the targets themselves arrived. With want 0
// answers from any address count (a broadcast is answered by others). It
// returns the first answer of each address; the error is one of sending,
// when no ping could be sent at all.
func discover(ctx context.Context, ep *endpoint, targets []netip.AddrPort, guid int64, want int) ([]Pong, error) {
	if guid == 0 {
		guid = newGUID(true)
	}
	type answer struct {
		from netip.AddrPort
		at   time.Time
		pong wire.UnconnectedPong
	}
	answers := make(chan answer, 64)
	stop, readDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readDone)
		ep.readLoop(func(b []byte, from netip.AddrPort, now time.Time) {
			if b[0] != wire.IDUnconnectedPong {
				return
			}
			from = key(from)
			if want > 0 && !slices.Contains(targets, from) {
				return
			}
			var m wire.UnconnectedPong
			if _, err := m.Decode(b); err != nil {
				return
			}
			m.Data = slices.Clone(m.Data)
			select {
			case answers <- answer{from, now, m}:
			case <-stop:
			}
		})
	}()
	defer func() {
		close(stop)
		ep.close()
		<-readDone
	}()

	start := time.Now()
	var lastSent time.Duration
	seen := make(map[netip.AddrPort]bool)
	var pongs []Pong
	ticker := time.NewTicker(pingRetry)
	defer ticker.Stop()
	send := func() error {
		lastSent = time.Since(start)
		ping := wire.UnconnectedPing{Time: lastSent.Milliseconds(), ClientGUID: guid}
		var b [64]byte
		var errs []error
		for _, t := range targets {
			if err := ep.write(ping.Append(b[:0]), t); err != nil {
				errs = append(errs, err)
			}
		}
		// Reaching some targets is enough to go on.
		if len(errs) == len(targets) {
			return errors.Join(errs...)
		}
		return nil
	}
	var sendErr error
	if err := send(); err != nil {
		sendErr = err
	}
	for {
		select {
		case <-ctx.Done():
			return pongs, sendErr
		case <-ticker.C:
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				// The ticker and the context's timer may fire together:
				// nothing leaves at the deadline.
				return pongs, sendErr
			}
			if err := send(); err != nil && len(pongs) == 0 {
				sendErr = err
			}
		case a := <-answers:
			if seen[a.from] || len(pongs) >= maxDiscovered {
				continue
			}
			seen[a.from] = true
			at := a.at.Sub(start)
			rtt := at - time.Duration(a.pong.Time)*time.Millisecond
			if a.pong.Time == lastSent.Milliseconds() {
				rtt = at - lastSent
			}
			pongs = append(pongs, Pong{Addr: a.from, GUID: a.pong.ServerGUID, Data: a.pong.Data, RTT: max(rtt, 0)})
			if want > 0 && len(pongs) >= want {
				return pongs, nil
			}
		}
	}
}
