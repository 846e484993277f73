package api

import "net/url"

func parseQuery(raw string) (url.Values, error) { return url.ParseQuery(raw) }
