// Package cdp drives a headless Chromium over the DevTools protocol, for
// tests that load the project's pages in a real browser: start it, open a
// page, evaluate JavaScript, dispatch input, take a screenshot. It needs
// no dependency: a small WebSocket client (ws.go) and encoding/json.
//
// The browser is Debian's chromium package, found as $CHROMIUM or as
// chromium, chromium-browser or google-chrome on $PATH ([Find]); tests
// skip with one line where there is none.
package cdp
