help help
