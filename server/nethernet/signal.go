package nethernet

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/pion/sdp/v3"
)

// handler returns the signalling endpoint: GET /v1/join with the status,
// POST /v1/join/{networkId} with an offer, and 404 for anything else.
func (l *Listener) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/join", l.serveStatus)
	mux.HandleFunc("POST /v1/join/{networkID}", l.serveOffer)
	return mux
}

// serveStatus answers GET /v1/join with the live status as JSON.
func (l *Listener) serveStatus(w http.ResponseWriter, req *http.Request) {
	markServed(req)
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

// serveOffer reads an offer and takes it through admission (see
// Listener.offer), answering with the SDP answer or the refusal.
func (l *Listener) serveOffer(w http.ResponseWriter, req *http.Request) {
	req.Close = true // one offer per connection, as the client sends
	l.stats.offers.Add(1)
	src := requestSource(req)
	if !l.adm.allowRate(src, time.Now()) {
		markServed(req)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many offers", http.StatusTooManyRequests)
		return
	}
	networkID := req.PathValue("networkID")
	if _, err := strconv.ParseUint(networkID, 10, 64); err != nil {
		markServed(req)
		l.stats.malformed.Add(1)
		http.Error(w, "network ID must be a uint64", http.StatusBadRequest)
		return
	}
	if req.ContentLength > l.conf.MaxOfferSize {
		markServed(req)
		l.stats.tooLarge.Add(1)
		http.Error(w, "offer too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, l.conf.MaxOfferSize))
	markServed(req)
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
	sig := &gonn.Signal{Type: gonn.SignalTypeOffer, ConnectionID: rand.Uint64(), NetworkID: networkID, Data: string(body)}
	t, code := l.offer(req.Context(), src, sig)
	if t == nil {
		writeRefusal(w, code)
		return
	}
	answer, err := l.https.await(req.Context(), t, sig, l.conf.NegotiationTimeout)
	if err != nil {
		t.release()
		var se *signalError
		if errors.As(err, &se) {
			if se.code == gonn.ErrorCodeIdentityVerificationFailed {
				l.stats.unauthenticated.Add(1)
			} else {
				l.stats.malformed.Add(1)
			}
			writeRefusal(w, se.code)
			return
		}
		l.stats.busy.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(answer))
}

// refusedBusyCode and the other negative codes are refusals the HTTP
// carrier answers with a status of its own; positive ones are NetherNet
// error codes a signal carries.
const (
	refusedRateCode = -1 - iota
	refusedBusyCode
	refusedMalformedCode
)

// writeRefusal answers a refused offer: busy and rate refusals with 503
// and 429 and a Retry-After, a malformed offer with 400, and a NetherNet
// error code as go-nethernet's endpoint writes it.
func writeRefusal(w http.ResponseWriter, code int) {
	switch code {
	case refusedRateCode:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many offers", http.StatusTooManyRequests)
	case refusedBusyCode:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	case refusedMalformedCode:
		http.Error(w, "not an SDP offer", http.StatusBadRequest)
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, "Negotiation failed with error code: %d", code)
	}
}

// offer is the one admission path every offer takes, whatever carried it,
// after the carrier's own rate check: the offer must look like an SDP
// offer, carry a valid identity in online mode (checked before any
// WebRTC state), and get a negotiation slot and an answering turn; then
// go-nethernet answers it. It returns the admitted negotiation's ticket,
// or nil and the code to refuse it with. src is the client's address.
func (l *Listener) offer(ctx context.Context, src netip.Addr, sig *gonn.Signal) (*ticket, int) {
	t, code := l.admitOffer(src, sig)
	if t == nil {
		return nil, code
	}
	if !t.wait(ctx) {
		t.release()
		l.stats.busy.Add(1)
		return nil, refusedBusyCode
	}
	return t, 0
}

// admitOffer is offer up to the answering turn: the checks and the
// negotiation slot, the offer's signals then being known by its name.
func (l *Listener) admitOffer(src netip.Addr, sig *gonn.Signal) (*ticket, int) {
	if err := checkOffer(sig.Data); err != nil {
		l.stats.malformed.Add(1)
		return nil, refusedMalformedCode
	}
	token, err := offerToken(sig.Data)
	if err != nil {
		l.stats.malformed.Add(1)
		return nil, refusedMalformedCode
	}
	switch {
	case token == "" && !l.conf.AllowAnonymous:
		l.stats.unauthenticated.Add(1)
		return nil, gonn.ErrorCodeIdentityVerificationFailed
	case token != "" && l.conf.VerifyToken != nil:
		vctx, cancel := context.WithTimeout(context.Background(), l.conf.AnswerWait)
		err := l.conf.VerifyToken(vctx, token)
		cancel()
		if err != nil {
			l.stats.unauthenticated.Add(1)
			l.refusalLog(src, err)
			return nil, gonn.ErrorCodeIdentityVerificationFailed
		}
	}
	sig.Data = clientStartsDTLS(sig.Data)
	t, why := l.adm.admit(src, time.Now())
	if t == nil {
		if why == refusedRate {
			return nil, refusedRateCode
		}
		return nil, refusedBusyCode
	}
	if !t.bind(connKey{sig.NetworkID, sig.ConnectionID}) {
		t.release()
		l.stats.malformed.Add(1)
		return nil, refusedMalformedCode
	}
	return t, 0
}

// checkOffer reports whether sdp is an offer go-nethernet can answer: an
// SDP description with one media section carrying ICE credentials, a
// DTLS fingerprint and role, and a max-message-size. It is checked here,
// before any state is made for it.
func checkOffer(offer string) error {
	if !strings.HasPrefix(offer, "v=0") || strings.IndexByte(offer, 0) >= 0 {
		return errors.New("not an SDP description")
	}
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		return fmt.Errorf("SDP: %w", err)
	}
	if len(d.MediaDescriptions) != 1 {
		return fmt.Errorf("%d media sections, want 1", len(d.MediaDescriptions))
	}
	m := d.MediaDescriptions[0]
	for _, attr := range []string{"ice-ufrag", "ice-pwd", "setup", "max-message-size"} {
		if _, ok := m.Attribute(attr); !ok {
			return fmt.Errorf("no %s", attr)
		}
	}
	if _, ok := m.Attribute("fingerprint"); !ok {
		if _, ok := d.Attribute("fingerprint"); !ok {
			return errors.New("no fingerprint")
		}
	}
	return nil
}

// clientStartsDTLS returns the offer with the client's DTLS role, when it
// left the choice to the server (a=setup:actpass), made the client's
// (a=setup:active), so that go-nethernet answers a=setup:passive and the
// client starts the DTLS handshake the moment its ICE completes. With the
// server starting it, a client that starts its DTLS side only after its
// own ICE completes (werift, as npm nethernet uses it) leaves pion's
// first ClientHello unanswered and waits the second, a second later.
// The identity assertion covers the fingerprint lines alone, which stay
// as they are.
func clientStartsDTLS(offer string) string {
	return strings.Replace(offer, "a=setup:actpass", "a=setup:active", 1)
}

// maxIdentity bounds an offer's a=identity attribute.
const maxIdentity = 16 << 10

// offerToken returns the token of an offer's identity assertion
// (a=identity: base64 of {"assertion": "{\"token\": ...}"}), "" when it
// carries none, and an error when the attribute is there but unreadable.
func offerToken(sdp string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(sdp))
	sc.Buffer(nil, maxSDPLine)
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "a=identity:")
		if !ok {
			continue
		}
		if len(v) > maxIdentity {
			return "", errors.New("identity too large")
		}
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", fmt.Errorf("identity: %w", err)
		}
		var outer struct {
			Assertion string `json:"assertion"`
		}
		var inner struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(raw, &outer); err != nil {
			return "", fmt.Errorf("identity: %w", err)
		}
		if err := json.Unmarshal([]byte(outer.Assertion), &inner); err != nil {
			return "", fmt.Errorf("identity assertion: %w", err)
		}
		if inner.Token == "" {
			return "", errors.New("identity assertion without a token")
		}
		return inner.Token, nil
	}
	if sc.Err() != nil {
		return "", sc.Err()
	}
	return "", nil
}

// signalError is a NetherNet error code signalled back for an offer.
type signalError struct{ code int }

func (e *signalError) Error() string {
	return "negotiation failed with error code " + strconv.Itoa(e.code)
}

// httpSignaling is the go-nethernet Signaling of the HTTP endpoint: an
// offer admitted by serveOffer is handed to go-nethernet's listener, and
// its answer (or error) is handed back to the waiting request. Candidates
// are never trickled: the answer carries them all.
type httpSignaling struct {
	l   *Listener
	ctx context.Context

	mu sync.Mutex
	notifierSlot
	pending map[connKey]chan *gonn.Signal
}

func newHTTPSignaling(l *Listener, ctx context.Context) *httpSignaling {
	return &httpSignaling{l: l, ctx: ctx, pending: make(map[connKey]chan *gonn.Signal)}
}

// await hands offer, t's, to go-nethernet and waits, at most timeout or
// until ctx is done, for its answer.
func (s *httpSignaling) await(ctx context.Context, t *ticket, offer *gonn.Signal, timeout time.Duration) (string, error) {
	key := t.key
	ch := make(chan *gonn.Signal, 1)
	s.mu.Lock()
	s.pending[key] = ch
	s.mu.Unlock()
	n := s.notifier()
	defer func() {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
	}()
	if n == nil || !n.NotifySignal(offer) {
		return "", errors.New("offer not taken")
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case sig := <-ch:
		if sig.Type == gonn.SignalTypeAnswer {
			return sig.Data, nil
		}
		code, _ := strconv.Atoi(sig.Data)
		return "", &signalError{code: code}
	case <-timer.C:
	case <-ctx.Done():
	}
	n.NotifySignal(&gonn.Signal{Type: gonn.SignalTypeError, ConnectionID: key.connectionID, NetworkID: key.networkID,
		Data: strconv.Itoa(gonn.ErrorCodeNegotiationTimeoutWaitingForResponse)})
	return "", errors.New("no answer in time")
}

// Signal delivers go-nethernet's answer or error to the request waiting
// for it.
func (s *httpSignaling) Signal(_ context.Context, sig *gonn.Signal) error {
	if sig.Type == gonn.SignalTypeCandidate {
		return errors.New("nethernet: HTTP signalling does not trickle candidates")
	}
	key := connKey{sig.NetworkID, sig.ConnectionID}
	if sig.Type == gonn.SignalTypeAnswer {
		s.l.adm.answered(key, sig.Data)
	}
	s.mu.Lock()
	ch, ok := s.pending[key]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("nethernet: no request waits for %s/%d", key.networkID, key.connectionID)
	}
	select {
	case ch <- sig:
		return nil
	default:
		return errors.New("nethernet: signal already delivered")
	}
}

func (s *httpSignaling) Context() context.Context { return s.ctx }

// Credentials returns none: the client reaches the server's host
// candidates directly.
func (s *httpSignaling) Credentials(context.Context) (*gonn.Credentials, error) {
	return &gonn.Credentials{}, nil
}

func (s *httpSignaling) NetworkID() string       { return strconv.FormatUint(s.l.conf.NetworkID, 10) }
func (s *httpSignaling) PongData([]byte)         {}
func (s *httpSignaling) DisableTrickleICE() bool { return true }

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

// ipLimiter allows each key rate events per one-second window.
type ipLimiter struct {
	rate, max int

	mu     sync.Mutex
	window time.Time
	counts map[netip.Addr]int
}

func newIPLimiter(rate, max int) *ipLimiter {
	return &ipLimiter{rate: rate, max: cmpOr(max, maxTrackedIPs), counts: make(map[netip.Addr]int)}
}

// allow charges one event to a's window and reports whether it is within
// the rate.
func (r *ipLimiter) allow(a netip.Addr, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.window) >= time.Second || now.Before(r.window) {
		r.window = now
		clear(r.counts)
	}
	n, seen := r.counts[a]
	if !seen && len(r.counts) >= r.max {
		return false
	}
	if n >= r.rate {
		return false
	}
	r.counts[a] = n + 1
	return true
}

// notifierSlot is the go-nethernet listener a Signaling hands the signals
// it receives to; both carriers embed one.
type notifierSlot struct {
	mu sync.Mutex
	n  gonn.Notifier
}

// Notify registers n as the listener signals go to.
func (s *notifierSlot) Notify(n gonn.Notifier) func() {
	s.mu.Lock()
	s.n = n
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.n == n {
			s.n = nil
		}
		s.mu.Unlock()
	}
}

// notifier returns the registered listener, nil if none.
func (s *notifierSlot) notifier() gonn.Notifier {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
