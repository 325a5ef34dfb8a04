"""The script kit: SQL scripts for engines tdebench cannot run here (SQL Server, Oracle, MySQL 8),
and their console logs imported as a run (`tdebench script`, `tdebench import`)."""
