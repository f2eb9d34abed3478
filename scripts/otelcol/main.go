// A minimal OpenTelemetry Collector for ehprof's tests: the OTLP receiver
// and the file exporter (contrib), nothing else. scripts/install_otelcol.sh
// builds it against pinned module versions; run it with
// --config=FILE --feature-gates=+service.profilesSupport.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// Set with -ldflags by the install script.
var version = "unknown"

func main() {
	factories := func() (otelcol.Factories, error) {
		r := otlpreceiver.NewFactory()
		e := fileexporter.NewFactory()
		return otelcol.Factories{
			Receivers: map[component.Type]receiver.Factory{r.Type(): r},
			Exporters: map[component.Type]exporter.Factory{e.Type(): e},
			Telemetry: otelconftelemetry.NewFactory(),
		}, nil
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "ehprof-otelcol",
			Description: "OTLP receiver and file exporter, for ehprof's tests",
			Version:     version,
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), yamlprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
