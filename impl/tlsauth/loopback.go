package tlsauth

import (
	"context"
	"fmt"
	"net"
	"time"
)

// CheckLoopback returns nil when addr (host:port) binds only loopback
// addresses: 127.0.0.0/8 or ::1, or a name that resolves to those only.
// An empty host, 0.0.0.0 and :: bind every interface.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("%q binds every interface", addr)
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s is not a loopback address", host)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("resolving %q: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return fmt.Errorf("%s resolves to %s, not a loopback address", host, ip.IP)
		}
	}
	if len(ips) == 0 {
		return fmt.Errorf("%s resolves to no address", host)
	}
	return nil
}
