/**
 * What Postgres says about a statement without running it: Parse + Describe(statement) + Sync on
 * the wire, answered by ParameterDescription (one type OID per `$n`) and RowDescription (per column:
 * name, type OID and, for a column read straight from a table, that table's OID and column number)
 * or NoData. Postgres 15 keeps no result types in pg_prepared_statements, so the protocol is the one
 * source that covers every statement, DML with RETURNING included.
 */
import type pg from 'pg';

/** One result column as RowDescription reports it; `tableId` 0 means computed, not a table column. */
export interface DescribedColumn {
  name: string;
  typeId: number;
  tableId: number;
  columnNumber: number;
}

export interface Description {
  paramTypeIds: number[];
  columns: DescribedColumn[];
}

interface Field {
  name: string;
  tableID: number;
  columnID: number;
  dataTypeID: number;
}

/**
 * A pg Submittable: the client queues it like any query and routes the statement's messages to its
 * handle* methods. ParameterDescription is not routed by the client, so it is read from the
 * connection while this statement is the active one. The unnamed statement is used: nothing stays
 * prepared on the session.
 */
class DescribeStatement {
  private params: number[] = [];
  private columns: DescribedColumn[] = [];
  private error: Error | undefined;
  private connection: pg.Connection | undefined;
  private readonly onParams = (msg: { dataTypeIDs: number[] }) => {
    this.params = [...msg.dataTypeIDs];
  };

  constructor(
    readonly text: string,
    private readonly done: (err: Error | undefined, result?: Description) => void,
  ) {}

  submit(connection: pg.Connection): void {
    this.connection = connection;
    connection.on('parameterDescription', this.onParams);
    connection.parse({ name: '', text: this.text, types: [] }, true);
    connection.describe({ type: 'S', name: '' }, true);
    connection.sync();
  }

  handleRowDescription(msg: { fields: Field[] }): void {
    this.columns = msg.fields.map((f) => ({ name: f.name, typeId: f.dataTypeID, tableId: f.tableID, columnNumber: f.columnID }));
  }

  handleError(err: Error): void {
    // the server skips to the Sync already sent, so ReadyForQuery follows and ends the statement
    this.error = err;
    this.finish();
  }

  handleReadyForQuery(): void {
    this.finish();
  }

  // the client calls these only for an executed statement; a described one never gets them
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.connection?.removeListener('parameterDescription', this.onParams);
    if (this.error) this.done(this.error);
    else this.done(undefined, { paramTypeIds: this.params, columns: this.columns });
  }
}

/** Describes `text` on `client` (connected, idle): its parameter types and result columns. */
export function describeStatement(client: pg.Client, text: string): Promise<Description> {
  return new Promise((resolve, reject) => {
    client.query(new DescribeStatement(text, (err, result) => (err ? reject(err) : resolve(result!))));
  });
}
