// Command iceberg_go_reads is run by tests/clients/test_iceberg_go.py: iceberg-go's REST catalog reads the
// tables named on the command line through the service, planning each scan remotely (on the service:
// table.WithScanPlanningMode(table.ScanPlanningRemote)) or locally (from the manifests, iceberg-go's
// default), one after the other.
//
//	iceberg_go_reads URI remote|local OUT_DIR NAMESPACE.TABLE [...]
//
// Each table's rows become OUT_DIR/<table>.parquet (Arrow's Parquet writer); OUT_DIR/result.json records
// per table the rows read or iceberg-go's error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

type outcome struct {
	Rows  *int64 `json:"rows,omitempty"`
	Error string `json:"error,omitempty"`
}

func read(ctx context.Context, cat *rest.Catalog, name string, mode table.ScanPlanningMode, out string) outcome {
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(strings.Split(name, ".")...))
	if err != nil {
		return outcome{Error: err.Error()}
	}
	rows, err := tbl.Scan(table.WithScanPlanningMode(mode)).ToArrowTable(ctx)
	if err != nil {
		return outcome{Error: err.Error()}
	}
	defer rows.Release()
	file, err := os.Create(filepath.Join(out, name[strings.LastIndex(name, ".")+1:]+".parquet"))
	if err != nil {
		return outcome{Error: err.Error()}
	}
	defer file.Close()
	props := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
	if err := pqarrow.WriteTable(rows, file, 64*1024, parquet.NewWriterProperties(), props); err != nil {
		return outcome{Error: err.Error()}
	}
	count := rows.NumRows()
	return outcome{Rows: &count}
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: iceberg_go_reads URI remote|local OUT_DIR NAMESPACE.TABLE [...]")
		os.Exit(2)
	}
	uri, mode, out := os.Args[1], table.ScanPlanningMode(os.Args[2]), os.Args[3]
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "scan-planner", uri)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connecting to the catalog:", err)
		os.Exit(1)
	}
	results := map[string]outcome{}
	for _, name := range os.Args[4:] {
		results[name] = read(ctx, cat, name, mode, out)
	}
	body, _ := json.MarshalIndent(results, "", " ")
	if err := os.WriteFile(filepath.Join(out, "result.json"), body, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
