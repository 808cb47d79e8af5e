package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// resend is how often a ping is repeated while no answer has come: UDP may
// lose the first.
const resend = 500 * time.Millisecond

// clientGUID returns a random negative client GUID, as vanilla clients
// send.
func clientGUID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) | 1<<63)
}

// pingOne pings the server at addr until it answers or ctx ends.
func pingOne(ctx context.Context, addr string) (answer, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return answer{}, err
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return answer{}, err
	}
	defer conn.Close()
	var a answer
	found := false
	err = exchange(ctx, conn, func(c *net.UDPConn, b []byte) error {
		_, err := c.Write(b)
		return err
	}, func(from *net.UDPAddr, p pong, latency time.Duration) bool {
		a, found = newAnswer(ua.String(), p, latency), true
		return true
	})
	if err != nil {
		return answer{}, err
	}
	if !found {
		return answer{}, fmt.Errorf("no answer from %s: %w", addr, context.Cause(ctx))
	}
	return a, nil
}

// scan pings every target (broadcast or unicast addresses) and returns every
// answer that arrives before ctx ends, one per answering address, sorted by
// address.
func scan(ctx context.Context, targets []string) ([]answer, error) {
	if len(targets) == 0 {
		return nil, errors.New("nothing to scan")
	}
	// One socket per family, each pinging its own targets.
	byFamily := map[string][]*net.UDPAddr{}
	for _, t := range targets {
		ua, err := net.ResolveUDPAddr("udp", t)
		if err != nil {
			return nil, err
		}
		family := "udp6"
		if ua.IP.To4() != nil {
			family = "udp4"
		}
		byFamily[family] = append(byFamily[family], ua)
	}
	var (
		mu      sync.Mutex
		answers = map[string]answer{}
		wg      sync.WaitGroup
		errs    []error
	)
	for family, uas := range byFamily {
		// Sockets are broadcast-capable: Go sets SO_BROADCAST on every UDP
		// socket it opens.
		conn, err := net.ListenUDP(family, nil)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		wg.Go(func() {
			err := exchange(ctx, conn, func(c *net.UDPConn, b []byte) error {
				var errs []error
				for _, ua := range uas {
					if _, err := c.WriteToUDP(b, ua); err != nil {
						errs = append(errs, fmt.Errorf("ping %s: %w", ua, err))
					}
				}
				// Sending to some targets is enough to go on.
				if len(errs) == len(uas) {
					return errors.Join(errs...)
				}
				return nil
			}, func(from *net.UDPAddr, p pong, latency time.Duration) bool {
				key := from.AddrPort().String()
				mu.Lock()
				if _, ok := answers[key]; !ok {
					answers[key] = newAnswer(key, p, latency)
				}
				mu.Unlock()
				return false // keep listening: others may answer
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(answers) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]answer, 0, len(answers))
	for _, a := range answers {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b answer) int { return strings.Compare(a.from, b.from) })
	return out, nil
}

// exchange sends pings with send, at once and every resend interval, and
// hands every pong that answers one of them to got, until got returns
// true or ctx ends (which is not an error).
func exchange(ctx context.Context, conn *net.UDPConn, send func(*net.UDPConn, []byte) error,
	got func(*net.UDPAddr, pong, time.Duration) bool) error {
	start := time.Now()
	guid := clientGUID()
	buf := make([]byte, 1500)
	for {
		sent := time.Since(start)
		if err := send(conn, appendPing(nil, sent, guid)); err != nil {
			return err
		}
		next := time.Now().Add(resend)
		if dl, ok := ctx.Deadline(); ok && dl.Before(next) {
			next = dl
		}
		_ = conn.SetReadDeadline(next)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					break
				}
				// A connected socket reports "connection refused" when
				// nothing listens: a definite answer. An unconnected one
				// (a scan) may report it for one target of several
				// (Windows does), so it keeps listening for the others.
				if conn.RemoteAddr() != nil || errors.Is(err, net.ErrClosed) {
					return err
				}
				continue
			}
			p, err := decodePong(buf[:n])
			if err != nil {
				continue // not a pong: ignore it
			}
			// The pong echoes the time of the ping it answers, in
			// milliseconds: exact for the latest ping, to the millisecond
			// for an earlier one.
			latency := time.Since(start) - time.Duration(p.time)*time.Millisecond
			if p.time == sent.Milliseconds() {
				latency = time.Since(start) - sent
			}
			if got(from, p, latency) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
