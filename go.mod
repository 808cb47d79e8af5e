module github.com/basaltmc/basalt

go 1.26.0

require (
	github.com/coreos/go-oidc/v3 v3.17.0
	github.com/dchest/siphash v1.2.3
	github.com/df-mc/atomic v1.10.0
	github.com/df-mc/go-nethernet v1.0.20
	github.com/go-gl/mathgl v1.1.0
	github.com/go-jose/go-jose/v4 v4.1.4
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.20.1
	github.com/mattn/go-isatty v0.0.20
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/pion/ice/v4 v4.2.7
	github.com/pion/logging v0.2.4
	github.com/pion/sdp/v3 v3.0.19
	github.com/pion/stun/v3 v3.1.6
	github.com/pion/transport/v4 v4.0.2
	github.com/pion/webrtc/v4 v4.2.16-0.20260627075746-7a223a6f4d4f
	github.com/pires/go-proxyproto v0.15.0
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/rs/zerolog v1.35.1
	github.com/sandertv/go-raknet v1.15.2-0.20260705184311-0d1fd09e2cf6
	github.com/sandertv/gophertunnel v1.62.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	gopkg.in/natefinch/lumberjack.v2 v2.2.1
)

require (
	github.com/andreburgaud/crypt2go v1.8.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coder/websocket v1.8.14 // indirect
	github.com/df-mc/go-playfab/v2 v2.0.2 // indirect
	github.com/df-mc/go-xsapi/v2 v2.0.3 // indirect
	github.com/df-mc/jsonc v1.0.5 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pion/datachannel v1.6.2 // indirect
	github.com/pion/dtls/v3 v3.1.4 // indirect
	github.com/pion/interceptor v0.1.45 // indirect
	github.com/pion/mdns/v2 v2.1.0 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/rtcp v1.2.16 // indirect
	github.com/pion/rtp v1.10.2 // indirect
	github.com/pion/sctp v1.10.2 // indirect
	github.com/pion/srtp/v3 v3.0.12 // indirect
	github.com/pion/turn/v5 v5.0.10 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/wlynxg/anet v0.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/exp v0.0.0-20240909161429-701f63a606c0 // indirect
	golang.org/x/image v0.21.0 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/sandertv/go-raknet => github.com/sandertv/go-raknet v1.15.1
