terraform {
  required_version = ">= 1.9.0"
  required_providers {
    aws = {
      # Every default works on 5.x and 6.x: max_message_bytes defaults to 262144, the most
      # hashicorp/aws before 6.8.0 accepts (1048576 needs >= 6.8.0; set it there).
      source  = "hashicorp/aws"
      version = ">= 5.70.0, < 7.0.0"
    }
  }
}
