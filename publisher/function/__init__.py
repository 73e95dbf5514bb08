"""The rewards function (AWS Lambda) answering /rewards/byStake, and its deployable zip."""
