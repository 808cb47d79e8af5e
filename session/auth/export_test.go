package auth

import "context"

// AwaitReady waits until v has keys or ctx is done, woken by the end of
// each fetch attempt rather than by polling.
func AwaitReady(ctx context.Context, v *Verifier) error {
	for {
		v.keys.mu.Lock()
		attempt := v.keys.attempt
		v.keys.mu.Unlock()
		if v.Ready() {
			return nil
		}
		select {
		case <-attempt:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
