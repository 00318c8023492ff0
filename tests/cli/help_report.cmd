help report
