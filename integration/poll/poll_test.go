package poll

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holdsAt  time.Duration // -1: never
		timeout  time.Duration
		want     bool
		wantTook time.Duration
	}{
		{"at once", 0, time.Second, true, 0},
		{"on the third look", 30 * time.Millisecond, time.Second, true, 30 * time.Millisecond},
		{"between looks: the next one", 25 * time.Millisecond, time.Second, true, 30 * time.Millisecond},
		{"never", -1, 95 * time.Millisecond, false, 95 * time.Millisecond},
		{"just at the deadline", 95 * time.Millisecond, 95 * time.Millisecond, true, 95 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				looks := 0
				got := Until(tc.timeout, 10*time.Millisecond, func() bool {
					looks++
					return tc.holdsAt >= 0 && time.Since(start) >= tc.holdsAt
				})
				if took := time.Since(start); got != tc.want || took != tc.wantTook {
					t.Errorf("got %v after %v (%d looks), want %v after %v", got, took, looks, tc.want, tc.wantTook)
				}
			})
		})
	}
}
