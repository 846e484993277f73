package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is where and how an agent exports its traces.
type Config struct {
	// Endpoint is the URL of an OTLP/HTTP receiver (protobuf encoding):
	// http://HOST:PORT or https://HOST:PORT, with a path or without one
	// (then /v1/traces, the receivers' default, is taken). "" turns
	// tracing off.
	Endpoint string
	// SampleRatio is the share of the transactions traced that start a
	// trace of their own (0 < ratio <= 1); a transaction whose request
	// carries a sampled trace context is always traced.
	SampleRatio float64
	// ServiceName names the agent in the traces (resource attribute
	// service.name); ServiceInstance (service.instance.id) tells agents
	// of one name apart.
	ServiceName, ServiceInstance string
}

// DefaultPath is the path of an Endpoint given without one.
const DefaultPath = "/v1/traces"

// EndpointURL returns the URL that the traces are posted to, or an error
// saying what is wrong with endpoint.
func EndpointURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("%q: %w", endpoint, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: the scheme must be http or https (an OTLP/HTTP receiver, e.g. http://127.0.0.1:4318)", endpoint)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%q: no host", endpoint)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q: only a scheme, a host with its port and a path are allowed", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultPath
	}
	return u.String(), nil
}

// Check says what is wrong with c (nothing when tracing is off).
func (c Config) Check() error {
	if c.Endpoint == "" {
		return nil
	}
	var errs []error
	if _, err := EndpointURL(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	}
	if !(c.SampleRatio > 0 && c.SampleRatio <= 1) {
		errs = append(errs, fmt.Errorf("sample_ratio: %v is not in (0, 1]", c.SampleRatio))
	}
	return errors.Join(errs...)
}

// Provider is a tracer provider exporting to an OTLP receiver (the
// scheduler's spans: Tracer(InstrumentationName)). Shutdown exports the
// spans not yet sent, within its context, and stops it.
type Provider struct {
	*sdktrace.TracerProvider
}

// Start returns the provider of c, exporting in batches in the background
// (nothing is sent until a span ends; a receiver that is down costs
// dropped spans and an error logged by OpenTelemetry, never a blocked
// transaction).
func Start(c Config) (*Provider, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Endpoint == "" {
		return nil, errors.New("tracing: no endpoint")
	}
	endpoint, _ := EndpointURL(c.Endpoint) // checked
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", c.ServiceName)}
	if c.ServiceInstance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", c.ServiceInstance))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
	)
	return &Provider{tp}, nil
}

// InstrumentationName names the scheduler's instrumentation in the traces.
const InstrumentationName = "github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
