package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/basaltmc/basalt/raknet"
)

// pingOne pings the server at addr until it answers or ctx ends.
func pingOne(ctx context.Context, addr string) (answer, error) {
	p, err := raknet.Dialer{}.PingPong(ctx, addr)
	if err != nil {
		return answer{}, fmt.Errorf("no answer from %s: %w", addr, err)
	}
	return newAnswer(p), nil
}

// scan pings every target (broadcast or unicast addresses) and returns every
// answer that arrives before ctx ends, one per answering address, sorted by
// address.
func scan(ctx context.Context, targets []string) ([]answer, error) {
	if len(targets) == 0 {
		return nil, errors.New("nothing to scan")
	}
	pongs, err := raknet.Dialer{}.Discover(ctx, targets...)
	if err != nil {
		return nil, err
	}
	out := make([]answer, 0, len(pongs))
	for _, p := range pongs {
		out = append(out, newAnswer(p))
	}
	return out, nil
}
