package attack

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"
)

// Bounds of Grab.
const (
	// MaxGrab bounds the connections one Grab opens.
	MaxGrab = 4096
	// grabDialTimeout bounds each of Grab's handshakes.
	grabDialTimeout = 3 * time.Second
)

// GrabResult is what Grab got.
type GrabResult struct {
	// Clients are the connections the server established; the caller
	// closes them (Close).
	Clients []*Client
	// Refused counts handshakes the server refused, by reply ID.
	Refused map[byte]int
	// Failed counts handshakes that failed otherwise (no answer in time).
	Failed int
}

// Close abandons every connection.
func (g *GrabResult) Close() {
	var wg sync.WaitGroup
	for _, c := range g.Clients {
		wg.Go(c.Abandon)
	}
	wg.Wait()
}

// Grab is one address taking slots: it opens n connections (at most
// MaxGrab) to server, all from ip, each from its own port, parallel
// handshakes at a time, each bounded by a few seconds. The connections it
// returns stay up, answering pings, until closed.
func Grab(ctx context.Context, ip netip.Addr, server netip.AddrPort, n, parallel int) *GrabResult {
	n = min(n, MaxGrab)
	parallel = max(parallel, 1)
	res := &GrabResult{Refused: make(map[byte]int)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, grabDialTimeout)
			defer cancel()
			c, err := Dial(dctx, ClientConfig{Local: netip.AddrPortFrom(ip, 0), Server: server})
			mu.Lock()
			defer mu.Unlock()
			var re *RefusedError
			switch {
			case err == nil:
				res.Clients = append(res.Clients, c)
			case errors.As(err, &re):
				res.Refused[re.ID]++
			default:
				res.Failed++
			}
		})
	}
	wg.Wait()
	return res
}
