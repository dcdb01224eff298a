// The PostgreSQL JDBC driver against `hudisql serve`: what DBeaver and Tableau do on connect.
// Usage: java -cp postgresql.jar:. PgJdbcClient PORT USER PASSWORD LONG_QUERY
// Prints one "name: value" line per check; the test reads them.
import java.sql.*;
import java.util.Properties;

public class PgJdbcClient {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/hudisql";
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", args[2]);
        props.setProperty("sslmode", "disable");
        try (Connection c = DriverManager.getConnection(url, props)) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product: " + md.getDatabaseProductName() + " "
                + md.getDatabaseProductVersion());
            try (ResultSet rs = md.getTables(null, "default", "%", new String[] {"TABLE"})) {
                StringBuilder names = new StringBuilder();
                while (rs.next()) names.append(rs.getString("TABLE_NAME")).append(",");
                System.out.println("tables: " + names);
            }
            try (ResultSet rs = md.getColumns(null, "default", "trips", "%")) {
                StringBuilder cols = new StringBuilder();
                while (rs.next()) {
                    cols.append(rs.getString("COLUMN_NAME")).append(":")
                        .append(rs.getString("TYPE_NAME")).append(",");
                }
                System.out.println("columns: " + cols);
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT uuid, fare FROM trips WHERE fare > ? ORDER BY uuid")) {
                ps.setDouble(1, 20.0);
                StringBuilder rows = new StringBuilder();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) rows.append(rs.getString(1)).append("=")
                        .append(rs.getDouble(2)).append(",");
                }
                System.out.println("filtered: " + rows);
            }
            c.setAutoCommit(false);  // setFetchSize streams through a portal only in a block
            try (Statement st = c.createStatement()) {
                st.setFetchSize(100);
                long n = 0, sum = 0;
                try (ResultSet rs = st.executeQuery("SELECT id FROM range(0, 1000, 1, 4)")) {
                    while (rs.next()) { n++; sum += rs.getLong(1); }
                }
                System.out.println("streamed: " + n + " " + sum);
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement st = c.createStatement()) {
                st.execute("CREATE INDEX idx_jdbc ON trips USING column_stats (ts)");
                System.out.println("create index: ok");
                int n = 0;
                try (ResultSet rs = st.executeQuery("SHOW TIMELINE trips")) {
                    while (rs.next()) n++;
                }
                System.out.println("timeline: " + n);
            }
            try (Statement st = c.createStatement()) {
                st.executeQuery("SELECT uuid FORM trips");
                System.out.println("parse error: none");
            } catch (SQLException e) {
                org.postgresql.util.PSQLException p = (org.postgresql.util.PSQLException) e;
                System.out.println("parse error: " + e.getSQLState() + " at "
                    + p.getServerErrorMessage().getPosition());
            }
            // Statement.cancel() from another thread while the query runs: the test tells
            // this program (a line on stdin) once the server runs it.
            final Statement longOne = c.createStatement();
            final String[] outcome = {"not cancelled"};
            Thread runner = new Thread(() -> {
                try {
                    longOne.executeQuery(args[3]);
                } catch (SQLException e) {
                    outcome[0] = e.getSQLState();
                }
            });
            runner.start();
            System.out.println("long query: started");
            System.out.flush();
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            longOne.cancel();
            runner.join();
            System.out.println("cancel: " + outcome[0]);
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
                rs.next();
                System.out.println("after cancel: " + rs.getInt(1));
            }
        }
    }
}
