package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
)

// logLevels lists the log.level values accepted, each a name
// zerolog.ParseLevel knows.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// nameFix ends an error about server.name or server.level_name.
const nameFix = "set it to non-empty text without ';', '\\' or control characters (§ colour codes are fine)"

// gameModes lists the game mode names server.game_mode accepts.
var gameModes = []string{"Survival", "Creative", "Adventure", "Spectator"}

// Validate checks every key and returns all problems found, joined with
// errors.Join, each naming its key as "table.key" and saying what is wrong.
func (uc UserConfig) Validate() error {
	def := DefaultUserConfig()
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, keyError(key, format, args...))
	}

	// [network]
	n := uc.Network
	if n.AddressV4 == "" && n.AddressV6 == "" {
		add("network.address_v4, network.address_v6", "both are empty; set network.address_v4 to %q or network.address_v6 to %q", def.Network.AddressV4, def.Network.AddressV6)
	}
	if err := checkAddress(n.AddressV4, false); err != nil {
		add("network.address_v4", "%q: %v; write it as \"IP:port\", such as \"0.0.0.0:19132\", or \"\" to disable IPv4", n.AddressV4, err)
	}
	if err := checkAddress(n.AddressV6, true); err != nil {
		add("network.address_v6", "%q: %v; write it as \"[IP]:port\", such as \"[::]:19133\", or \"\" to disable IPv6", n.AddressV6, err)
	}
	for i, p := range n.TrustedProxies {
		if _, err := parseProxyPrefix(p); err != nil {
			add(fmt.Sprintf("network.trusted_proxies[%d]", i), "%q is not a CIDR prefix or an IP; write a prefix such as \"203.0.113.0/24\" or a single IP such as \"203.0.113.7\", or remove it", p)
		}
	}
	if n.ProxyProtocol && len(n.TrustedProxies) == 0 {
		add("network.trusted_proxies, network.proxy_protocol", "is empty, and network.proxy_protocol needs the proxies' addresses; list them, such as [\"203.0.113.0/24\"], or set network.proxy_protocol = false")
	}
	if _, err := parsePublicAddress(n.PublicAddress); err != nil {
		add("network.public_address", "%q: %v; set it to the \"IP:port\" players connect to, such as \"203.0.113.5:19132\" or \"[2001:db8::5]:19132\", or \"\" to advertise the listening ports", n.PublicAddress, err)
	}
	if (n.NetherNetTLSCert == "") != (n.NetherNetTLSKey == "") {
		add("network.nethernet_tls_cert, network.nethernet_tls_key", "only one is set; set both to PEM files for HTTPS, or both to \"\" for plain HTTP")
	}
	if n.NetherNetICEPort < 0 || n.NetherNetICEPort > math.MaxUint16 {
		add("network.nethernet_ice_port", "%d is outside 0-65535; set it to 0 to share the game port, or to a free UDP port from 1 to 65535", n.NetherNetICEPort)
	}
	if ap, err := parsePublicAddress(n.NetherNetAdvertise); err != nil {
		add("network.nethernet_advertise_address", "%q: %v; set it to the \"IP:port\" that reaches this server's UDP game port from the players, such as \"203.0.113.11:19132\", or \"\" to advertise network.public_address's IP", n.NetherNetAdvertise, err)
	} else if ap.IsValid() {
		checkAdvertise(add, n.AddressV4, n.AddressV6, n.NetherNetICEPort, ap)
	}
	if n.Sockets < 1 || n.Sockets > raknet.MaxSockets {
		add("network.sockets", "%d is outside 1-%d; set it to 1, or to at most the number of CPU cores to spare", n.Sockets, raknet.MaxSockets)
	}

	// [server]
	s := uc.Server
	if e := motd.Edition(s.Edition); e != motd.EditionBedrock && e != motd.EditionEducation {
		add("server.edition", "%q is not an edition; set it to %q for Bedrock Edition or %q for Education Edition", s.Edition, motd.EditionBedrock, motd.EditionEducation)
	}
	if !slices.Contains(gameModes, s.GameMode) {
		add("server.game_mode", "%q is not a game mode; set it to one of %s, capitalised as shown", s.GameMode, strings.Join(gameModes, ", "))
	}
	if s.MaxPlayers < 1 {
		add("server.max_players", "%d is less than 1; set it to the most players you want online at once", s.MaxPlayers)
	}
	if !isVersion(s.Version) {
		add("server.version", "%q is not a version; set it to the game version in network form, such as %q", s.Version, def.Server.Version)
	}
	if err := checkProtocol(s.Protocol); err != nil {
		add("server.protocol", "%v; set it to one of %v", err, session.KnownProtocols())
	}
	if len(s.AcceptedProtocols) == 0 {
		add("server.accepted_protocols", "is empty; list at least one of %v", session.KnownProtocols())
	}
	for i, p := range s.AcceptedProtocols {
		if err := checkProtocol(p); err != nil {
			add(fmt.Sprintf("server.accepted_protocols[%d]", i), "%v; list only protocols of %v", err, session.KnownProtocols())
		} else if _, ok := session.LookupProtocol(int32(p)); !ok {
			add(fmt.Sprintf("server.accepted_protocols[%d]", i), "%d is not a protocol this build speaks; list only protocols of %v", p, session.KnownProtocols())
		}
	}
	if len(s.AcceptedProtocols) > 0 && !slices.Contains(s.AcceptedProtocols, s.Protocol) {
		add("server.protocol, server.accepted_protocols", "%d is not in server.accepted_protocols %v; set it to one of them, or add it to server.accepted_protocols", s.Protocol, s.AcceptedProtocols)
	}
	if err := checkPlaceholders(s.DisconnectMessage); err != nil {
		add("server.disconnect_message", "%v; remove it, or write %s for the player's name", err, session.PlayerPlaceholder)
	}
	if h := server.BuiltinHandler(s.Handler); h != server.HandlerGate && h != server.HandlerLobby {
		add("server.handler", "%q is not a handler; set it to %q or %q", s.Handler, server.HandlerGate, server.HandlerLobby)
	}
	if err := checkPlaceholders(s.Greeting); err != nil {
		add("server.greeting", "%v; remove it, or write %s for the player's name", err, session.PlayerPlaceholder)
	}
	checkDuration(add, "server.login_timeout", s.LoginTimeout, def.Server.LoginTimeout, maxLoginTimeout)
	if d, err := time.ParseDuration(s.ShutdownGrace); err != nil {
		add("server.shutdown_grace", "%q is not a duration; write it with a unit, such as \"10s\", or \"0s\" to close at once", s.ShutdownGrace)
	} else if d < 0 || d > server.MaxShutdownGrace {
		add("server.shutdown_grace", "%v is outside 0s-%v; set it to at most %v, such as \"10s\", or \"0s\" to close at once", d, server.MaxShutdownGrace, server.MaxShutdownGrace)
	}
	if s.OnlineMode {
		if u, err := url.Parse(s.AuthDiscoveryURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add("server.auth_discovery_url", "%q is not an http(s) URL; set it to %q, or set server.online_mode = false", s.AuthDiscoveryURL, def.Server.AuthDiscoveryURL)
		}
		if u, err := url.Parse(s.AuthIssuer); s.AuthIssuer != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			add("server.auth_issuer", "%q is not an http(s) URL; set it to %q, or \"\" for none", s.AuthIssuer, def.Server.AuthIssuer)
		}
	}
	if s.AllowlistFile == "" {
		add("server.allowlist_file", "is empty; set it to a file name, such as %q (created if missing)", def.Server.AllowlistFile)
	}
	if s.BansFile == "" {
		add("server.bans_file", "is empty; set it to a file name, such as %q (created if missing)", def.Server.BansFile)
	}
	errs = append(errs, uc.checkMOTD()...)

	// [log]
	if !slices.Contains(logLevels, uc.Log.Level) {
		add("log.level", "%q is not a level; set it to one of %s", uc.Log.Level, strings.Join(logLevels, ", "))
	}
	if f := uc.Log.Format; f != "console" && f != "json" {
		add("log.format", "%q is not a format; set it to \"console\" or \"json\"", f)
	}
	if m := uc.Log.FileMaxMiB; m < 1 || m > maxLogFileMiB {
		add("log.file_max_mib", "%d is outside 1-%d; set it to a size in MiB in that range, such as %d", m, maxLogFileMiB, def.Log.FileMaxMiB)
	}
	if uc.Log.FileBackups < 0 {
		add("log.file_backups", "%d is negative; set it to how many rotated files to keep, or 0 to keep them all", uc.Log.FileBackups)
	}

	// [raknet]
	r := uc.RakNet
	if r.MaxMTU < raknet.MinMTU || r.MaxMTU > raknet.MaxMTU {
		add("raknet.max_mtu", "%d is outside %d-%d; set it to a size in that range, such as %d", r.MaxMTU, raknet.MinMTU, raknet.MaxMTU, def.RakNet.MaxMTU)
	}
	switch {
	case r.MaxConnections < 0:
		add("raknet.max_connections", "%d is negative; set it to 0 to derive it from server.max_players, or to a positive count", r.MaxConnections)
	case r.MaxConnections > 0 && r.MaxConnections < s.MaxPlayers:
		add("raknet.max_connections", "%d is less than server.max_players %d; set it to at least %d, or 0 to derive it from server.max_players", r.MaxConnections, s.MaxPlayers, s.MaxPlayers)
	}
	checkDuration(add, "raknet.timeout", r.Timeout, def.RakNet.Timeout, maxTimeout)
	if len(r.ProtocolVersions) == 0 {
		add("raknet.protocol_versions", "is empty; list at least one of %v", raknet.DefaultProtocolVersions())
	}
	for i, v := range r.ProtocolVersions {
		if v < 0 || v > math.MaxUint8 || !slices.Contains(raknet.DefaultProtocolVersions(), byte(v)) {
			add(fmt.Sprintf("raknet.protocol_versions[%d]", i), "%d is not a RakNet version Bedrock clients speak; list only %v (11 since Minecraft 1.19.30, 10 before it and in PrismarineJS clients), or leave the key out", v, raknet.DefaultProtocolVersions())
		}
	}
	if r.MaxConnectionsPerIP < 0 {
		add("raknet.max_connections_per_ip", "%d is negative; set it to 0 for no limit, or to a positive count", r.MaxConnectionsPerIP)
	}
	if b := int64(r.MemoryBudget); b < minMemoryBudget || b > maxMemoryBudget {
		add("raknet.memory_budget", "%d is outside %d-%d (4 MiB-64 GiB); set it to a byte count in that range, such as %d (128 MiB)", b, minMemoryBudget, int64(maxMemoryBudget), def.RakNet.MemoryBudget)
	}

	// [metrics]
	if err := checkTCPAddress(uc.Metrics.Address); err != nil {
		add("metrics.address", "%q: %v; write it as \"IP:port\", such as \"127.0.0.1:9100\", or \"\" to serve no metrics", uc.Metrics.Address, err)
	}
	if uc.Metrics.Pprof && uc.Metrics.Address == "" {
		add("metrics.pprof, metrics.address", "is true but metrics.address is empty; set metrics.address, such as \"127.0.0.1:9100\", or set metrics.pprof = false")
	}
	return uc.withLines(errors.Join(errs...))
}

// parseProxyPrefix parses a network.trusted_proxies entry: a CIDR prefix,
// or an IP standing for itself alone.
func parseProxyPrefix(s string) (netip.Prefix, error) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}

// checkAdvertise checks network.nethernet_advertise_address ap against
// the socket NetherNet's peer connections use: the IPv4 game address's
// (the IPv6 one's without it), or nethernet_ice_port on its host. Its
// family must be that socket's, and its port the socket's when known
// (not 0): ICE candidates are rewritten by address, never by port.
func checkAdvertise(add func(key, format string, args ...any), v4, v6 string, icePort int, ap netip.AddrPort) {
	game, key := v4, "network.address_v4"
	if game == "" {
		game, key = v6, "network.address_v6"
	}
	_, port, err := net.SplitHostPort(game)
	if err != nil {
		return // reported under its own key
	}
	if ap.Addr().Is4() != (game == v4) {
		add("network.nethernet_advertise_address", "%q is not of the family of %s %q, where NetherNet's peer connections are; advertise an address of that family", ap, key, game)
		return
	}
	want, _ := strconv.Atoi(port)
	if icePort > 0 {
		want, key = icePort, "network.nethernet_ice_port"
	}
	if want != 0 && int(ap.Port()) != want {
		add("network.nethernet_advertise_address", "%q: port %d is not %d, the UDP port of NetherNet's peer connections (%s); ICE candidates keep their port, so advertise %q and forward that port unchanged", ap, ap.Port(), want, key, netip.AddrPortFrom(ap.Addr(), uint16(want)))
	}
}

// parsePublicAddress parses network.public_address: empty (not set, the
// zero value), or an IP literal and a port players can be sent to, so no
// unspecified, multicast or zone-qualified address and no port 0.
func parsePublicAddress(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not \"IP:port\" or \"[IPv6]:port\": %w", err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return netip.AddrPort{}, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return netip.AddrPort{}, fmt.Errorf("host %q is not an IP address (names are not resolved)", host)
	case ip.Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("host %q has a zone, which players elsewhere cannot use", host)
	case ip.IsUnspecified():
		return netip.AddrPort{}, fmt.Errorf("host %q is the unspecified address, not one players can reach", host)
	case ip.IsMulticast():
		return netip.AddrPort{}, fmt.Errorf("host %q is a multicast address", host)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

// checkDuration checks a Go duration string that must be more than 0 and at
// most limit, reporting a problem with add; def is the key's default,
// offered in the fix.
func checkDuration(add func(key, format string, args ...any), key, v, def string, limit time.Duration) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		add(key, "%q is not a duration; write it with a unit, such as %q", v, def)
	case d <= 0:
		add(key, "%v is not more than 0; set it to a duration up to %v, such as %q", d, limit, def)
	case d > limit:
		add(key, "%v is longer than %v; set it to at most %v, such as %q", d, limit, limit, def)
	}
}

// checkAddress checks a "host:port" UDP address: empty (disabled), or an IP
// literal of the right family (or no host, meaning every address) and a
// port.
func checkAddress(addr string, v6 bool) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return fmt.Errorf("host %q is not an IP address", host)
	case v6 && !ip.Is6():
		return fmt.Errorf("host %q is not an IPv6 address", host)
	case v6 && ip.Is4In6():
		return fmt.Errorf("host %q is an IPv4-mapped address, which belongs in network.address_v4", host)
	case !v6 && !ip.Is4():
		return fmt.Errorf("host %q is not an IPv4 address", host)
	}
	return nil
}

// checkTCPAddress checks a "host:port" TCP address: empty (none), or an IP
// literal (or no host, meaning every address) and a port.
func checkTCPAddress(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil {
		return fmt.Errorf("host %q is not an IP address", host)
	}
	return nil
}

// checkProtocol checks a Bedrock network protocol number.
func checkProtocol(p int) error {
	if p < 1 || p > math.MaxInt32 {
		return fmt.Errorf("%d is outside 1-%d", p, math.MaxInt32)
	}
	return nil
}

// isVersion reports whether v is dot-separated decimal numbers, "1.26.50".
func isVersion(v string) bool {
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return len(parts) >= 2
}

// checkPlaceholders rejects any {…} in msg other than
// session.PlayerPlaceholder, so a typo such as {name} is caught rather than
// shown to players.
func checkPlaceholders(msg string) error {
	for rest := msg; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return nil
		}
		rest = rest[i:]
		if strings.HasPrefix(rest, session.PlayerPlaceholder) {
			rest = rest[len(session.PlayerPlaceholder):]
			continue
		}
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return nil // a lone '{' is text
		}
		return fmt.Errorf("unknown placeholder %q (only %s is supported)", rest[:j+1], session.PlayerPlaceholder)
	}
}

// worstStatus returns the MOTD the server would send with every number at
// its longest, to check the names fit.
func (uc UserConfig) worstStatus() motd.Status {
	return motd.Status{
		Edition:         motd.Edition(uc.Server.Edition),
		ServerName:      uc.Server.Name,
		Protocol:        uc.Server.Protocol,
		Version:         uc.Server.Version,
		Players:         uc.Server.MaxPlayers,
		MaxPlayers:      uc.Server.MaxPlayers,
		ServerGUID:      math.MaxInt64,
		LevelName:       uc.Server.LevelName,
		GameMode:        uc.Server.GameMode,
		GameModeNumeric: 1,
		PortV4:          math.MaxUint16,
		PortV6:          math.MaxUint16,
		Extra:           []string{"0"},
	}
}

// checkMOTD checks server.name and server.level_name with motd's own rules:
// no characters the MOTD cannot carry, and short enough not to be truncated.
func (uc UserConfig) checkMOTD() []error {
	err := uc.worstStatus().Validate()
	if err == nil {
		return nil
	}
	all := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	var errs []error
	for _, e := range all {
		fe, ok := errors.AsType[*motd.FieldError](e)
		switch {
		case ok && fe.Field == "ServerName":
			errs = append(errs, keyError("server.name", "%v; %s", fe.Err, nameFix))
		case ok && fe.Field == "LevelName":
			errs = append(errs, keyError("server.level_name", "%v; %s", fe.Err, nameFix))
		case errors.Is(e, motd.ErrTooLong):
			st := uc.worstStatus()
			st.ServerName, st.LevelName = "", ""
			b, _ := st.Encode()
			over := len(b) + len(uc.Server.Name) + len(uc.Server.LevelName) - motd.MaxEncodedLen
			errs = append(errs, keyError("server.name, server.level_name",
				"together %d bytes too long for the %d-byte MOTD; shorten them by %d bytes", over, motd.MaxEncodedLen, over))
		}
		// Other fields are checked, with clearer messages, by Validate.
	}
	return errs
}
