//! Configuration, read once from the environment at start-up.

/// Names of the variables.
pub mod vars {
    /// The orders table (hash key `id`).
    pub const TABLE_NAME: &str = "ORDERS_TABLE_NAME";
}

pub use dynamodb_outbox_core::ConfigError;

/// What the consumer needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The orders table.
    pub table_name: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads through `lookup` (a map in tests: no `env::set_var`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table_name = dynamodb_outbox_core::config::required(
            &lookup,
            vars::TABLE_NAME,
            "set it to the orders table's name (hash key `id`)",
        )?;
        Ok(Config { table_name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_name_is_read_from_orders_table_name() {
        let config = Config::from_lookup(|n| (n == "ORDERS_TABLE_NAME").then(|| "orders".into()));
        assert_eq!(
            config.ok(),
            Some(Config {
                table_name: "orders".into()
            })
        );
    }

    #[test]
    fn a_missing_or_empty_table_name_fails_naming_the_variable() {
        for value in [None, Some(" ".to_owned())] {
            let err = Config::from_lookup(|_| value.clone()).expect_err("missing");
            assert!(err.to_string().contains("ORDERS_TABLE_NAME"), "{err}");
        }
    }
}
