package nethernet

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// handler returns the signalling endpoint: GET /v1/join with the status,
// POST /v1/join/{networkId} with an offer, and 404 for anything else.
// Offers pass the Listener's limits before go-nethernet's handler sees
// them.
func (l *Listener) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/join", l.serveStatus)
	mux.HandleFunc("POST /v1/join/{networkID}", l.serveOffer)
	return mux
}

// serveStatus answers GET /v1/join with the live status as JSON.
func (l *Listener) serveStatus(w http.ResponseWriter, _ *http.Request) {
	var st Status
	if l.conf.Status != nil {
		st = l.conf.Status()
	}
	b, err := json.Marshal(st)
	if err != nil {
		http.Error(w, "status unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// serveOffer admits an offer within the limits (rate per IP, body size,
// negotiations in progress) and hands it to go-nethernet, whose listener
// answers it.
func (l *Listener) serveOffer(w http.ResponseWriter, req *http.Request) {
	req.Close = true // one offer per connection, as the client sends
	l.stats.offers.Add(1)
	if l.limiter != nil && !l.limiter.allow(remoteIP(req.RemoteAddr), time.Now()) {
		l.stats.rateLimited.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many offers", http.StatusTooManyRequests)
		return
	}
	if _, err := strconv.ParseUint(req.PathValue("networkID"), 10, 64); err != nil {
		l.stats.malformed.Add(1)
		http.Error(w, "network ID must be a uint64", http.StatusBadRequest)
		return
	}
	if req.ContentLength > l.conf.MaxOfferSize {
		l.stats.tooLarge.Add(1)
		http.Error(w, "offer too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, l.conf.MaxOfferSize))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			l.stats.tooLarge.Add(1)
			http.Error(w, "offer too large", http.StatusRequestEntityTooLarge)
			return
		}
		l.stats.malformed.Add(1)
		http.Error(w, "unreadable offer", http.StatusBadRequest)
		return
	}
	if !plausibleOffer(body) {
		l.stats.malformed.Add(1)
		http.Error(w, "not an SDP offer", http.StatusBadRequest)
		return
	}
	// Admission: offers being answered and peers still starting share
	// one cap, so neither a flood of offers nor one of half-open peers
	// grows without bound.
	ip := remoteIP(req.RemoteAddr)
	now := time.Now()
	if l.slots != nil && !l.slots.acquire(ip, now) {
		l.stats.busy.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	busy := func() {
		l.stats.busy.Add(1)
		l.slots.release(ip, now)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}
	n := l.stats.inFlight.Add(1)
	defer l.stats.inFlight.Add(-1)
	if n+l.stats.halfOpen.Load() > int64(l.conf.MaxNegotiations) {
		busy()
		return
	}
	// Offers are answered one at a time: wait for a turn, at most two
	// offers per address in line, so an address that floods waits
	// behind its own offers, not a player's.
	if !l.waiting.acquire(ip, now) {
		busy()
		return
	}
	defer l.waiting.release(ip, now)
	t := time.NewTimer(l.conf.NegotiationTimeout / 2)
	select {
	case l.answering <- struct{}{}:
		t.Stop()
	case <-t.C:
		busy()
		return
	case <-req.Context().Done():
		t.Stop()
		l.slots.release(ip, now)
		return
	}
	defer func() { <-l.answering }()
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	sw := &statusWriter{ResponseWriter: w}
	l.ep.ServeHTTP(sw, req)
	if sw.status == http.StatusOK {
		// The slot stays held while the peer connects.
		l.stats.answered.Add(1)
	} else {
		l.stats.malformed.Add(1)
		l.slots.release(ip, now)
	}
}

// plausibleOffer reports whether b looks like an SDP session description:
// text starting "v=0". go-nethernet parses it in full.
func plausibleOffer(b []byte) bool {
	return bytes.HasPrefix(b, []byte("v=0")) && !bytes.ContainsRune(b, 0)
}

// statusWriter records the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// remoteIP returns the IP of an http.Request's RemoteAddr.
func remoteIP(addr string) netip.Addr {
	ap, err := netip.ParseAddrPort(addr)
	if err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	a, _ := netip.ParseAddr(strings.Trim(host, "[]"))
	return a.Unmap()
}

// maxTrackedIPs bounds the addresses an ipLimiter remembers within one
// second; past it, offers from addresses not yet seen that second are
// refused, so a spread-out flood costs a bounded map, not memory without
// end.
const maxTrackedIPs = 4096

// ipLimiter allows each IP address (IPv6 by /64) rate offers per
// one-second window.
type ipLimiter struct {
	rate int

	mu     sync.Mutex
	window time.Time
	counts map[netip.Addr]int
}

func newIPLimiter(rate int) *ipLimiter {
	return &ipLimiter{rate: rate, counts: make(map[netip.Addr]int)}
}

// allow charges one offer to a's window and reports whether it is within
// the rate.
func (r *ipLimiter) allow(a netip.Addr, now time.Time) bool {
	a = prefixOf(a)
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.window) >= time.Second || now.Before(r.window) {
		r.window = now
		clear(r.counts)
	}
	n, seen := r.counts[a]
	if !seen && len(r.counts) >= maxTrackedIPs {
		return false
	}
	if n >= r.rate {
		return false
	}
	r.counts[a] = n + 1
	return true
}

// ipSlots caps the negotiations each IP address (IPv6 by /64) has in
// progress: an admitted offer holds a slot until its negotiation time is
// up, or until it is released because it was refused.
type ipSlots struct {
	max  int
	hold time.Duration

	mu sync.Mutex
	m  map[netip.Addr][]time.Time // when each held slot frees
}

func newIPSlots(n int, hold time.Duration) *ipSlots {
	return &ipSlots{max: n, hold: hold, m: make(map[netip.Addr][]time.Time)}
}

// acquire takes a slot of a's, reporting false if it holds max already or
// maxTrackedIPs addresses hold slots.
func (s *ipSlots) acquire(a netip.Addr, now time.Time) bool {
	a = prefixOf(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	held := live(s.m[a], now)
	if len(held) == 0 && len(s.m) >= maxTrackedIPs {
		for k, v := range s.m {
			if len(live(v, now)) == 0 {
				delete(s.m, k)
			}
		}
		if len(s.m) >= maxTrackedIPs {
			return false
		}
	}
	if len(held) >= s.max {
		s.m[a] = held
		return false
	}
	s.m[a] = append(held, now.Add(s.hold))
	return true
}

// release gives back the slot a took at now. It is a no-op on a nil
// ipSlots.
func (s *ipSlots) release(a netip.Addr, now time.Time) {
	if s == nil {
		return
	}
	a = prefixOf(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.m[a]
	for i, t := range held {
		if t.Equal(now.Add(s.hold)) {
			held = append(held[:i], held[i+1:]...)
			break
		}
	}
	if len(held) == 0 {
		delete(s.m, a)
	} else {
		s.m[a] = held
	}
}

// live returns the slots of held not yet free at now, in place.
func live(held []time.Time, now time.Time) []time.Time {
	out := held[:0]
	for _, t := range held {
		if t.After(now) {
			out = append(out, t)
		}
	}
	return out
}

// prefixOf returns the address limits key a by: itself, or its /64.
func prefixOf(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
