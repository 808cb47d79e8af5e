package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"testing"
	"time"
)

func TestDataRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		seq  uint32
		size int
	}{
		{"minimum", 0, minDataSize},
		{"100 B", 7, 100},
		{"wraps filler", 250, 300},
		{"large sequence", 1<<32 - 1, 64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := appendData(nil, tc.seq, tc.size)
			if len(p) != tc.size {
				t.Fatalf("got %d bytes, want %d", len(p), tc.size)
			}
			if err := checkData(p, tc.seq, tc.size); err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if err := checkData(p, tc.seq+1, tc.size); err == nil {
				t.Fatal("got nil for the wrong sequence, want an error")
			}
			if tc.size > minDataSize {
				bad := bytes.Clone(p)
				bad[len(bad)-1]++
				if err := checkData(bad, tc.seq, tc.size); err == nil {
					t.Fatal("got nil for a corrupted byte, want an error")
				}
			}
		})
	}
}

func TestACKRoundTrip(t *testing.T) {
	p := appendACK(nil, 3, 1<<40)
	want := []byte{0xfe, 'A', 'C', 'K', 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1, 0, 0, 0, 0, 0}
	if !bytes.Equal(p, want) {
		t.Fatalf("got % x, want % x", p, want)
	}
	packets, n, err := parseACK(p)
	if err != nil || packets != 3 || n != 1<<40 {
		t.Fatalf("got %d, %d, %v, want 3, %d, nil", packets, n, err, uint64(1<<40))
	}
	for i := range len(p) {
		if _, _, err := parseACK(p[:i]); err == nil {
			t.Fatalf("got nil for a %d-byte prefix, want an error", i)
		}
	}
	if !isSYN([]byte("\xfeSYN")) || isSYN(appendData(nil, 0, 5)) {
		t.Fatal("isSYN: got the wrong answer for SYN or a data packet")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}}
	for _, tc := range tests {
		if got := percentile(d, tc.p); got != tc.want {
			t.Errorf("percentile(%v): got %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing: got %v, want 0", got)
	}
}

func TestParseRates(t *testing.T) {
	got, err := parseRates("1, 5%,10")
	if err != nil || fmt.Sprint(got) != "[0.01 0.05 0.1]" {
		t.Fatalf("got %v, %v, want [0.01 0.05 0.1], nil", got, err)
	}
	if _, err := parseRates("x"); err == nil {
		t.Fatal("got nil for a bad rate, want an error")
	}
}

// TestServers runs the echo and sink servers in-process on both
// implementations and drives each with both dialers.
func TestServers(t *testing.T) {
	for _, srv := range []impl{implBasalt, implGoRakNet} {
		for _, cli := range []impl{implBasalt, implGoRakNet} {
			t.Run(fmt.Sprintf("%s server, %s client", srv, cli), func(t *testing.T) {
				t.Parallel()
				testEcho(t, srv, cli)
				testSink(t, srv, cli)
			})
		}
	}
}

func startServer(t *testing.T, im impl, m mode) *server {
	t.Helper()
	s, err := serve(im, m, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dialServer(t *testing.T, im impl, s *server) *reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pong, err := ping(ctx, im, s.addr())
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	if !bytes.Equal(pong, pongData) {
		t.Fatalf("ping: got %q, want %q", pong, pongData)
	}
	c, err := dial(ctx, im, s.addr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	r := newReader(c, 4)
	t.Cleanup(func() {
		r.close()
		_ = c.Close()
	})
	return r
}

func testEcho(t *testing.T, srv, cli impl) {
	s := startServer(t, srv, modeEcho)
	r := dialServer(t, cli, s)
	for _, size := range []int{minDataSize, 100, 5000} {
		rtts, err := runEcho(r, echoOpts{N: 20, Size: size, Window: 4, Timeout: 5 * time.Second,
			Deadline: time.Now().Add(10 * time.Second)})
		if err != nil {
			t.Fatalf("echo %d B: %v", size, err)
		}
		if len(rtts) != 20 {
			t.Fatalf("echo %d B: got %d round trips, want 20", size, len(rtts))
		}
	}
	// Every echo is at least one datagram each way.
	if in, out := s.datagrams(); in < 60 || out < 60 {
		t.Fatalf("server datagrams: got %d in, %d out, want at least 60 each", in, out)
	}
}

func testSink(t *testing.T, srv, cli impl) {
	s := startServer(t, srv, modeSink)
	r := dialServer(t, cli, s)
	res := runStream(r, streamOpts{Size: 1024, MaxBytes: 64 << 10, Duration: 2 * time.Second, AckWait: 5 * time.Second})
	if res.Err != nil {
		t.Fatalf("stream: %v", res.Err)
	}
	if res.AckPackets != 64 || res.AckBytes != 64<<10 {
		t.Fatalf("sink counted %d packets, %d bytes, want 64, %d", res.AckPackets, res.AckBytes, 64<<10)
	}
	// A second SYN reports the same totals: the first was not counted.
	if _, err := r.c.Write(synPacket); err != nil {
		t.Fatal(err)
	}
	p, err := r.next(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if packets, n, err := parseACK(p); err != nil || packets != 64 || n != 64<<10 {
		t.Fatalf("second ACK: got %d, %d, %v, want 64, %d, nil", packets, n, err, 64<<10)
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("echo 3: %w", errTimeout), "timeout"},
		{fmt.Errorf("%w: closed", errDied), "died"},
		{fmt.Errorf("echo 9: %w", errDeadline), "deadline"},
		{errors.New("out of order"), "mismatch"},
	}
	for _, tc := range tests {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v): got %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("100, 1000,")
	if err != nil || fmt.Sprint(got) != "[100 1000]" {
		t.Fatalf("got %v, %v, want [100 1000], nil", got, err)
	}
	for _, bad := range []string{"x", "0", "-5", "70000"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q): got nil, want an error", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tc := range tests {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v): got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// The table takes each implementation's median and the median of the
// ratios within each run, and says how many runs measured a number.
func TestAggregate(t *testing.T) {
	rw := row{phase: "echo", key: "echo.p50", format: "%.0f"}
	mk := func(b, g val) runRecords {
		recs := runRecords{}
		for im, v := range map[impl]val{implBasalt: b, implGoRakNet: g} {
			recs[im] = &record{im: im, m: map[string]val{rw.key: v}, status: map[string]string{}}
		}
		return recs
	}
	runs := []runRecords{mk(num(10), num(20)), mk(num(30), num(20)), mk(num(20), val{has: true, s: "died"})}
	f := aggregate(rw, runs)
	if f.bs != "20" || f.gs != "20 (2/3 runs)" {
		t.Errorf("cells: got %q, %q, want \"20\", \"20 (2/3 runs)\"", f.bs, f.gs)
	}
	if len(f.ratios) != 3 || f.ratios[0] != 0.5 || f.ratios[1] != 1.5 || !math.IsInf(f.ratios[2], 1) {
		t.Fatalf("ratios: got %v, want [0.5 1.5 +Inf]", f.ratios)
	}
	if x, ok := f.medianRatio(); !ok || x != 1.5 {
		t.Errorf("median ratio: got %v, %v, want 1.5, true", x, ok)
	}
	// A word only: the failing run is shown.
	rw = row{phase: "multi", key: "multi.ok", target: survives}
	bad := false
	fail := mk(val{s: "9/10", ok: &bad}, note("10/10"))
	f = aggregate(rw, []runRecords{mk(note("yes"), note("yes")), fail})
	if f.bs != "9/10" || verdict(rw, f) != "FAIL" {
		t.Errorf("got %q, %s, want \"9/10\", FAIL", f.bs, verdict(rw, f))
	}
}

func TestSocketDrops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/net/udp")
	}
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := uint16(pc.LocalAddr().(*net.UDPAddr).Port)
	if n, err := socketDrops(port); err != nil || n != 0 {
		t.Fatalf("got %d, %v, want 0, nil", n, err)
	}
	_ = pc.Close()
	if _, err := socketDrops(port); err == nil {
		t.Fatal("closed socket: got nil, want an error")
	}
	if _, err := readUDPCounters(); err != nil {
		t.Fatalf("UDP counters: %v", err)
	}
}
